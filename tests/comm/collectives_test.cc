// Every collective x dtype x op x element count x placement, on a real
// backend, verified exactly. Runs inside every rank of a job started by
// `dtbench launch` (gloo) or mpirun (mpi); see tests/CMakeLists.txt.
//   collectives_test --backend gloo|mpi
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bench/comm/buffers.h"
#include "bench/comm/collective.h"
#include "bench/comm/data.h"
#include "comm/communicator.h"
#include "comm/factory.h"
#include "compat/torch_version.h"
#include "core/error.h"
#include "launch/world.h"
#include "support/comm_test_main.h"

namespace dtbench {
namespace {

std::unique_ptr<comm::Communicator> g_comm;

// Per-rank element counts: empty, single, and counts that do not divide
// evenly by any world size 2..4.
const std::int64_t kCounts[] = {0, 1, 2, 3, 5, 7, 13, 64, 1001};

struct Outcome {
  int ran = 0;
  int skipped = 0;
};

TEST(Collectives, EveryCombinationIsExact) {
  comm::Communicator& c = *g_comm;
  Outcome outcome;
  for (const auto coll : comm::all_collectives()) {
    const auto& def = bench::collective_def(coll);
    const auto ops = comm::is_reduction(coll) ? comm::all_ops()
                                              : std::vector<comm::ReduceOp>{comm::ReduceOp::kSum};
    for (const auto dtype : comm::all_dtypes()) {
      for (const auto op : ops) {
        const std::string why = c.unsupported_reason(coll, dtype, op);
        if (!why.empty()) {
          ++outcome.skipped;
          continue;
        }
        for (const auto per_rank : kCounts) {
          for (const bool in_place : {false, true}) {
            if (in_place && def.in_place == bench::InPlace::kNone) continue;
            bench::CollArgs a;
            a.comm = &c;
            a.dtype = dtype;
            a.op = op;
            a.root = c.size() - 1;  // a root other than 0 where there is one
            a.rank = c.rank();
            a.nranks = c.size();
            a.count = def.splits ? per_rank * c.size() : per_rank;
            const auto wrong = bench::run_and_count_wrong(def, a, in_place);
            EXPECT_EQ(wrong, 0) << fmt::format("{} {} {} count={} {} on rank {}",
                                               comm::to_string(coll), comm::to_string(dtype),
                                               comm::to_string(op), a.count,
                                               in_place ? "in-place" : "out-of-place", c.rank());
            ++outcome.ran;
          }
        }
      }
    }
  }
  // Pinned per backend and LibTorch (a combination wrongly reported
  // unsupported would be skipped, not failed): collective x dtype x op
  // combinations skipped, and cases run (each combination's counts and
  // placements). One rank has no sendrecv peer. LibTorch 1.13's Gloo has no
  // reduce_scatter and fewer dtypes/ops than 2.x's.
  struct Pinned {
    int ran, skipped;
  };
  const bool torch1 = compat::torch_version()[0] == '1';
  const bool one = c.size() == 1;
  Pinned want{};
  if (c.backend() == "mpi")
    want = one ? Pinned{1350, 24} : Pinned{1404, 18};
  else if (torch1)
    want = one ? Pinned{945, 59} : Pinned{990, 54};
  else
    want = one ? Pinned{1530, 12} : Pinned{1584, 6};
  EXPECT_EQ(outcome.ran, want.ran) << c.backend() << ", LibTorch " << compat::torch_version();
  EXPECT_EQ(outcome.skipped, want.skipped) << c.backend() << ", LibTorch " << compat::torch_version();
  if (c.rank() == 0)
    fmt::print("{}: {} ranks: {} cases exact, {} unsupported combinations skipped\n", c.backend(),
               c.size(), outcome.ran, outcome.skipped);
}

TEST(Collectives, UnsupportedCombinationsAreRefusedClearly) {
  comm::Communicator& c = *g_comm;
  // Both backends refuse avg (neither MPI nor 1.13's gloo has it) with a reason.
  const std::string why = c.unsupported_reason(comm::Collective::kAllreduce,
                                               comm::DType::kFloat32, comm::ReduceOp::kAvg);
  if (c.backend() == "mpi") {
    EXPECT_NE(why.find("avg"), std::string::npos);
  }
  if (c.size() == 1) {
    EXPECT_FALSE(c.unsupported_reason(comm::Collective::kSendrecv, comm::DType::kFloat32,
                                      comm::ReduceOp::kSum)
                     .empty());
  }
  // Every backend, every size: each refused combination's reason names what
  // is refused (the collective, the dtype or the op), and the common case,
  // a float32 sum allreduce, is never refused.
  EXPECT_EQ(c.unsupported_reason(comm::Collective::kAllreduce, comm::DType::kFloat32, comm::ReduceOp::kSum), "");
  for (const auto coll : comm::all_collectives())
    for (const auto dtype : comm::all_dtypes())
      for (const auto op : comm::all_ops()) {
        const std::string reason = c.unsupported_reason(coll, dtype, op);
        if (reason.empty()) continue;
        EXPECT_TRUE(reason.find(comm::to_string(coll)) != std::string::npos ||
                    reason.find(comm::to_string(dtype)) != std::string::npos ||
                    reason.find(comm::to_string(op)) != std::string::npos)
            << comm::to_string(coll) << " " << comm::to_string(dtype) << " " << comm::to_string(op)
            << ": " << reason;
      }
}

TEST(Collectives, CompositeCollectivesAreNamed) {
  comm::Communicator& c = *g_comm;
  // Gloo's reduce_scatter, where it has one (LibTorch 2.x), allreduces
  // copies of the input's chunks: named, so that the sharded strategies
  // allreduce instead. MPI's collectives are its own.
  const bool has_reduce_scatter =
      c.unsupported_reason(comm::Collective::kReduceScatter, comm::DType::kFloat32, comm::ReduceOp::kSum).empty();
  const std::string why = c.composite_reason(comm::Collective::kReduceScatter);
  if (c.backend() == "gloo") {
    EXPECT_EQ(why.empty(), !has_reduce_scatter) << why;
    if (has_reduce_scatter) {
      EXPECT_NE(why.find("allreduc"), std::string::npos) << why;
    }
  }
  for (const auto coll : comm::all_collectives()) {
    if (coll == comm::Collective::kReduceScatter && c.backend() == "gloo") continue;
    EXPECT_TRUE(c.composite_reason(coll).empty()) << comm::to_string(coll) << ": " << c.composite_reason(coll);
  }
}

TEST(Collectives, BarrierAndPointToPoint) {
  comm::Communicator& c = *g_comm;
  c.barrier();
  if (c.size() < 2) return;
  // Ring shift with explicit send/recv on distinct tags.
  auto mine = at::full({17}, static_cast<double>(c.rank()), at::kDouble);
  auto got = at::zeros({17}, at::kDouble);
  const int next = (c.rank() + 1) % c.size();
  const int prev = (c.rank() + c.size() - 1) % c.size();
  if (c.rank() % 2 == 0) {
    c.send(mine, next, 5)->wait(c.timeout());
    c.recv(got, prev, 5)->wait(c.timeout());
  } else {
    c.recv(got, prev, 5)->wait(c.timeout());
    c.send(mine, next, 5)->wait(c.timeout());
  }
  EXPECT_TRUE(at::equal(got, at::full({17}, static_cast<double>(prev), at::kDouble)));
}

}  // namespace
}  // namespace dtbench

int main(int argc, char** argv) {
  return dtbench::testing::run_comm_tests(argc, argv, "collectives_test", dtbench::g_comm);
}
