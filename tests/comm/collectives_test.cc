// Every collective x dtype x op x element count x placement, on a real
// backend, verified exactly. Runs inside every rank of a job started by
// `dtbench launch` (gloo) or mpirun (mpi); see tests/CMakeLists.txt.
//   collectives_test --backend gloo|mpi
#include <algorithm>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bench/comm/buffers.h"
#include "bench/comm/collective.h"
#include "bench/comm/comm_bench.h"
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
    // A barrier moves no data: its check is the order of arrivals (the
    // BarrierLetsNoRankLeaveEarly test below), not element by element.
    if (coll == comm::Collective::kBarrier) continue;
    // alltoallv has its own test (AlltoallvUnevenPartsExact): every split
    // kind rather than every dtype.
    if (coll == comm::Collective::kAlltoallv) continue;
    // So do allgatherv and reduce_scatter_v (VCollectivesExact).
    if (coll == comm::Collective::kAllgatherv || coll == comm::Collective::kReduceScatterV) continue;
    // bool and float8 have theirs too (BoolAndFloat8).
    const auto& def = bench::collective_def(coll);
    const auto ops = comm::is_reduction(coll) ? comm::all_ops()
                                              : std::vector<comm::ReduceOp>{comm::ReduceOp::kSum};
    for (const auto dtype : comm::all_dtypes()) {
      if (dtype == comm::DType::kBool || comm::is_float8(dtype)) continue;
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
            a.seed = 1000 + static_cast<std::uint64_t>(per_rank);
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
  // placements). One rank has no sendrecv peer; pingpong needs exactly 2. LibTorch 1.13's Gloo has no
  // reduce_scatter and fewer dtypes/ops than 2.x's.
  struct Pinned {
    int ran, skipped;
  };
  // pingpong runs at exactly 2 ranks (each dtype: +9 cases), skipped at the
  // other sizes (+1 combination per dtype it would run).
  const bool torch1 = compat::torch_version()[0] == '1';
  const int n = std::min(c.size(), 3);  // 1, 2, or 3 and more
  Pinned want{};
  if (c.backend() == "mpi")
    want = n == 1 ? Pinned{1944, 40} : n == 2 ? Pinned{2088, 24} : Pinned{2016, 32};
  else if (torch1)
    want = n == 1 ? Pinned{1449, 85} : n == 2 ? Pinned{1575, 71} : Pinned{1512, 78};
  else
    want = n == 1 ? Pinned{2124, 28} : n == 2 ? Pinned{2268, 12} : Pinned{2196, 20};
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
  // Gloo's allgatherv and reduce_scatter_v are made of broadcasts and an
  // allreduce (its allgather and reduce_scatter take equal parts only).
  if (c.backend() == "gloo") {
    EXPECT_NE(c.composite_reason(comm::Collective::kAllgatherv).find("broadcast"), std::string::npos);
    EXPECT_NE(c.composite_reason(comm::Collective::kReduceScatterV).find("allreduce"), std::string::npos);
  }
  for (const auto coll : comm::all_collectives()) {
    if (c.backend() == "gloo" && (coll == comm::Collective::kReduceScatter || coll == comm::Collective::kAllgatherv ||
                                  coll == comm::Collective::kReduceScatterV))
      continue;
    EXPECT_TRUE(c.composite_reason(coll).empty()) << comm::to_string(coll) << ": " << c.composite_reason(coll);
  }
}

// A communicator that gets routing wrong the way a broken backend might:
// chunks swapped (allgather, alltoall), the neighbouring rank's chunk
// (reduce_scatter), from the wrong peer (sendrecv). The check must catch each,
// with chunk sizes that are multiples of 64 elements (where the old periodic
// test data could not tell chunks apart).
class Misrouting : public comm::Communicator {
 public:
  explicit Misrouting(comm::Communicator& c) : c_(c) {}
  std::string backend() const override { return c_.backend(); }
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  std::chrono::milliseconds timeout() const override { return c_.timeout(); }
  std::string unsupported_reason(comm::Collective k, comm::DType d, comm::ReduceOp o) const override {
    return c_.unsupported_reason(k, d, o);
  }
  comm::WorkPtr allreduce(const at::Tensor& in, at::Tensor& out, comm::ReduceOp op) override {
    return c_.allreduce(in, out, op);
  }
  comm::WorkPtr broadcast(const at::Tensor& in, at::Tensor& out, int root) override {
    return c_.broadcast(in, out, root);
  }
  comm::WorkPtr reduce(const at::Tensor& in, at::Tensor& out, int root, comm::ReduceOp op) override {
    // Out of place, a non-root's output is overwritten (with its input).
    c_.reduce(in, out, root, op)->wait(timeout());
    if (rank() != root && !in.is_same(out)) out.copy_(in);
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr allgather(const at::Tensor& in, at::Tensor& out) override {
    c_.allgather(in, out)->wait(timeout());
    swap_chunks(out);
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr reduce_scatter(const at::Tensor& in, at::Tensor& out, comm::ReduceOp op) override {
    // The whole reduction, then the next rank's chunk.
    at::Tensor all = in.clone();
    c_.allreduce(all, all, op)->wait(timeout());
    out.copy_(all.narrow(0, ((rank() + 1) % size()) * out.numel(), out.numel()));
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr alltoall(const at::Tensor& in, at::Tensor& out) override {
    c_.alltoall(in, out)->wait(timeout());
    swap_chunks(out);
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr allgatherv(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& counts) override {
    // The parts in rank order rotated by one.
    c_.allgatherv(in, out, counts)->wait(timeout());
    if (!counts.empty() && counts[0] > 0 && counts[0] < out.numel()) out.copy_(at::roll(out, -counts[0]));
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr reduce_scatter_v(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& counts,
                                 comm::ReduceOp op) override {
    // The whole reduction, then this rank's count from the first element
    // (every rank's part at offset 0).
    at::Tensor all = in.clone();
    c_.allreduce(all, all, op)->wait(timeout());
    out.copy_(all.narrow(0, 0, out.numel()));
    (void)counts;
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr send(const at::Tensor& t, int dst, int tag) override { return c_.send(t, dst, tag); }
  comm::WorkPtr recv(at::Tensor& t, int src, int tag) override { return c_.recv(t, src, tag); }
  comm::WorkPtr sendrecv(const at::Tensor& in, at::Tensor& out, int dst, int src) override {
    // Every rank sends to the rank before it instead: each receives from
    // the rank after it.
    (void)dst;
    (void)src;
    return c_.sendrecv(in, out, (rank() + size() - 1) % size(), (rank() + 1) % size());
  }
  comm::WorkPtr gather(const at::Tensor& in, at::Tensor& out, int root) override {
    // Chunks in the wrong order on the root.
    c_.gather(in, out, root)->wait(timeout());
    if (rank() == root) swap_chunks(out);
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr scatter(const at::Tensor& in, at::Tensor& out, int root) override {
    // Every rank gets the next rank's chunk: scatter the root's buffer
    // rotated by one chunk.
    at::Tensor rotated = in;
    if (rank() == root && in.numel() > 0) rotated = at::roll(in, -out.numel());
    return c_.scatter(rotated, out, root);
  }
  void barrier() override { c_.barrier(); }
  comm::WorkPtr alltoallv(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& ins,
                          const std::vector<std::int64_t>& outs) override {
    return c_.alltoallv(in, out, ins, outs);
  }

 protected:
  comm::Communicator& real() const { return c_; }

 private:
  void swap_chunks(at::Tensor& out) const {
    const auto c = out.numel() / size();
    const auto first = out.narrow(0, 0, c).clone();
    out.narrow(0, 0, c).copy_(out.narrow(0, c, c));
    out.narrow(0, c, c).copy_(first);
  }
  comm::Communicator& c_;
};

TEST(Collectives, MisroutedChunksAreCaught) {
  comm::Communicator& real = *g_comm;
  if (real.size() < 2) GTEST_SKIP() << "one rank has nothing to misroute";
  Misrouting bad(real);
  for (const auto coll : {comm::Collective::kAllgather, comm::Collective::kReduceScatter,
                          comm::Collective::kAlltoall, comm::Collective::kSendrecv, comm::Collective::kGather,
                          comm::Collective::kScatter}) {
    if (coll == comm::Collective::kSendrecv && real.size() < 3) continue;  // a 2-rank ring is its own reverse
    if (coll == comm::Collective::kReduceScatter &&
        !real.unsupported_reason(comm::Collective::kAllreduce, comm::DType::kFloat32, comm::ReduceOp::kSum).empty())
      continue;
    const auto& def = bench::collective_def(coll);
    for (const std::int64_t per_rank : {64, 128, 1024}) {
      for (std::uint64_t seed : {1ULL, 2ULL}) {
        bench::CollArgs a;
        a.comm = &bad;
        a.rank = real.rank();
        a.nranks = real.size();
        a.count = def.splits ? per_rank * real.size() : per_rank;
        a.seed = seed;
        std::int64_t mine = bench::run_and_count_wrong(def, a, false);
        at::Tensor wrong = at::full({1}, mine, at::kLong);
        real.allreduce(wrong, wrong, comm::ReduceOp::kSum)->wait(real.timeout());
        // Most of the misplaced elements differ (a 1-in-64 chance each to agree).
        EXPECT_GT(wrong.item<std::int64_t>(), per_rank / 2)
            << comm::to_string(coll) << " chunks of " << per_rank << ", seed " << seed;
        // The same call through the real communicator is exact.
        a.comm = &real;
        if (real.unsupported_reason(coll, a.dtype, a.op).empty()) {
          EXPECT_EQ(bench::run_and_count_wrong(def, a, false), 0) << comm::to_string(coll);
        }
      }
    }
  }
}

// Operations in flight at once (-m) that mix up each other's buffers: each
// call reduces or gathers the input of the call before it (as a backend
// that reused a stale pointer would). The check of -m runs each in-flight
// operation on its own data, so it must catch this; one at a time it cannot
// happen, and the real communicator is exact either way.
class StaleInput : public Misrouting {
 public:
  explicit StaleInput(comm::Communicator& c) : Misrouting(c), real_(c) {}
  comm::WorkPtr allreduce(const at::Tensor& in, at::Tensor& out, comm::ReduceOp op) override {
    const at::Tensor src = previous(in);
    if (!src.is_same(out)) out.copy_(src);
    return real_.allreduce(out, out, op);
  }
  comm::WorkPtr allgather(const at::Tensor& in, at::Tensor& out) override {
    return real_.allgather(previous(in).clone(), out);
  }

 private:
  at::Tensor previous(const at::Tensor& in) {
    at::Tensor was = last_.defined() ? last_ : in;
    last_ = in.clone();
    return was;
  }
  comm::Communicator& real_;
  at::Tensor last_;
};

TEST(Collectives, InFlightOperationsEachCheckedOnTheirOwnData) {
  comm::Communicator& real = *g_comm;
  for (const auto coll : {comm::Collective::kAllreduce, comm::Collective::kAllgather}) {
    const auto& def = bench::collective_def(coll);
    bench::CollArgs a;
    a.rank = real.rank();
    a.nranks = real.size();
    a.count = def.splits ? 256 * real.size() : 256;
    a.seed = 7;
    for (const bool in_place : {false, true}) {
      StaleInput bad(real);
      a.comm = &bad;
      std::int64_t mine = bench::run_and_count_wrong(def, a, in_place, 3);
      at::Tensor wrong = at::full({1}, mine, at::kLong);
      real.allreduce(wrong, wrong, comm::ReduceOp::kSum)->wait(real.timeout());
      EXPECT_GT(wrong.item<std::int64_t>(), 128) << comm::to_string(coll) << (in_place ? " in place" : " out of place");
      StaleInput fresh(real);
      a.comm = &fresh;
      EXPECT_EQ(bench::run_and_count_wrong(def, a, in_place, 1), 0) << "one at a time nothing is stale";
      a.comm = &real;
      EXPECT_EQ(bench::run_and_count_wrong(def, a, in_place, 3), 0) << comm::to_string(coll) << " 3 in flight";
    }
  }
  EXPECT_NE(bench::in_flight_seed(7, 1), bench::in_flight_seed(7, 2));
  EXPECT_EQ(bench::in_flight_seed(7, 0), 7u);
}

// A barrier that lets ranks through before the last one arrived: rank 1
// sleeps 20 ms before each iteration, so with no barrier rank 0 is gone
// before it comes. The driver's check (arrivals against departures on the
// common clock) must count those iterations as wrong; the real one is exact.
class NoBarrier : public Misrouting {
 public:
  using Misrouting::Misrouting;
  void barrier() override {}
};

TEST(Collectives, BarrierLetsNoRankLeaveEarly) {
  comm::Communicator& real = *g_comm;
  if (real.size() < 2) GTEST_SKIP() << "one rank waits for nobody";
  bench::CommBenchOptions o;
  o.collectives = {comm::Collective::kBarrier};
  o.iters = 4;
  o.warmup = 1;
  o.delay_rank = 1;
  o.delay_us = 20000;
  o.seed = 1;
  NoBarrier fake(real);
  const auto bad = bench::run_comm_bench(real, fake, {}, o, nullptr);
  ASSERT_EQ(bad.records.size(), 1u);
  EXPECT_EQ(bad.records[0].bytes, 0u);
  EXPECT_EQ(bad.records[0].out_of_place.wrong, 4) << "every iteration let rank 0 out early";
  const auto good = bench::run_comm_bench(real, real, {}, o, nullptr);
  ASSERT_EQ(good.records.size(), 1u);
  EXPECT_EQ(good.records[0].out_of_place.wrong, 0);
  EXPECT_FALSE(good.records[0].in_place.ran);
  // Rank 1 arrives last: the others waited for it.
  EXPECT_EQ(good.records[0].out_of_place.late_rank, 1);
}

// Allreduces issued and not yet waited for, over one or several
// communicators, and the most at once.
struct InFlight {
  int open = 0, most = 0;
};

// Counts its allreduces into an InFlight shared with others.
class CountsInFlight : public Misrouting {
 public:
  CountsInFlight(comm::Communicator& c, InFlight& n) : Misrouting(c), n_(n) {}
  comm::WorkPtr allreduce(const at::Tensor& in, at::Tensor& out, comm::ReduceOp op) override {
    n_.most = std::max(n_.most, ++n_.open);
    ++ops_;
    return std::make_unique<Counted>(real().allreduce(in, out, op), n_.open);
  }
  int ops() const { return ops_; }

 private:
  class Counted : public comm::Work {
   public:
    Counted(comm::WorkPtr w, int& open) : w_(std::move(w)), open_(open) {}
    ~Counted() override { release(); }
    void wait(std::chrono::milliseconds t) override {
      w_->wait(t);
      release();
    }
    bool done() override { return w_->done(); }
    std::exception_ptr error() override { return w_->error(); }

   private:
    void release() {
      if (!released_) --open_;
      released_ = true;
    }
    comm::WorkPtr w_;
    int& open_;
    bool released_ = false;
  };
  InFlight& n_;
  int ops_ = 0;
};

// -m 4 issues an iteration's 4 operations before waiting for any; -z 1
// (nccl-tests' --blocking) waits for each before issuing the next. Both
// exact.
TEST(Collectives, BlockingWaitsForEachOperation) {
  comm::Communicator& real = *g_comm;
  bench::CommBenchOptions o;
  o.sweep.min_bytes = o.sweep.max_bytes = 4096;
  o.iters = 3;
  o.warmup = 1;
  o.agg_iters = 4;
  o.in_place = false;
  o.seed = 1;
  for (const bool blocking : {false, true}) {
    o.blocking = blocking;
    InFlight n;
    CountsInFlight counting(real, n);
    const auto r = bench::run_comm_bench(real, counting, {}, o, nullptr);
    ASSERT_EQ(r.records.size(), 1u);
    EXPECT_EQ(r.records[0].out_of_place.wrong, 0);
    EXPECT_EQ(n.most, blocking ? 1 : 4) << (blocking ? "-z 1" : "-z 0");
  }
}

// --concurrent 2: every operation is issued on both communicators before
// either is waited for (with -z 1 too: -z orders -m's operations, not the
// lanes), both lanes run as often, the check ran on both, and algbw counts
// both messages.
TEST(Collectives, ConcurrentLanesRunAtOnce) {
  comm::Communicator& real = *g_comm;
  bench::CommBenchOptions o;
  o.sweep.min_bytes = o.sweep.max_bytes = 4096;
  o.iters = 3;
  o.warmup = 1;
  o.concurrent = 2;
  o.in_place = false;
  o.seed = 1;
  for (const bool blocking : {false, true}) {
    o.blocking = blocking;
    InFlight n;
    CountsInFlight a(real, n), b(real, n);
    const auto r = bench::run_comm_bench(real, a, {}, o, nullptr, {&b});
    ASSERT_EQ(r.records.size(), 1u);
    const auto& t = r.records[0].out_of_place;
    EXPECT_EQ(t.wrong, 0);
    EXPECT_EQ(n.most, 2) << (blocking ? "-z 1" : "-z 0");
    EXPECT_EQ(a.ops(), b.ops());
    EXPECT_EQ(a.ops(), o.warmup + o.iters + 1);  // warm-up, timed, the check
    EXPECT_NEAR(t.algbw_gbs, 2.0 * 4096 / t.time_us / 1e3, 1e-9);
  }
  EXPECT_THROW(bench::run_comm_bench(real, real, {}, o, nullptr), std::exception) << "K - 1 lanes are required";
}

// alltoallv with every kind of parts, uneven counts included: exact; a
// backend that puts the received parts in the wrong order (rank order
// rotated by one) is caught.
class RotatedParts : public Misrouting {
 public:
  using Misrouting::Misrouting;
  comm::WorkPtr alltoallv(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& ins,
                          const std::vector<std::int64_t>& outs) override {
    real().alltoallv(in, out, ins, outs)->wait(timeout());
    if (!outs.empty() && outs[0] > 0 && outs[0] < out.numel()) out.copy_(at::roll(out, -outs[0]));
    return std::make_unique<comm::CompletedWork>();
  }
};

TEST(Collectives, AlltoallvUnevenPartsExact) {
  comm::Communicator& real = *g_comm;
  const auto& def = bench::collective_def(comm::Collective::kAlltoallv);
  for (const char* kind : {"uniform", "skewed", "random:5"}) {
    for (const std::int64_t count : {std::int64_t{1}, std::int64_t{7} * real.size() + 3, std::int64_t{4096}}) {
      bench::CollArgs a;
      a.comm = &real;
      a.rank = real.rank();
      a.nranks = real.size();
      a.count = count;
      a.seed = 11;
      a.vsplit = bench::parse_vsplit(kind);
      EXPECT_EQ(bench::run_and_count_wrong(def, a, false), 0) << kind << " count " << count;
      EXPECT_EQ(bench::run_and_count_wrong(def, a, false, 2), 0) << kind << " count " << count << ", 2 in flight";
      if (real.size() < 2 || count < 1000) continue;
      RotatedParts bad(real);
      a.comm = &bad;
      std::int64_t mine = bench::run_and_count_wrong(def, a, false);
      at::Tensor wrong = at::full({1}, mine, at::kLong);
      real.allreduce(wrong, wrong, comm::ReduceOp::kSum)->wait(real.timeout());
      EXPECT_GT(wrong.item<std::int64_t>(), count / 2) << kind;
    }
  }
}

// allgatherv and reduce_scatter_v, every dtype and op the backend takes,
// every kind of parts, uneven counts and empty parts included: exact. A
// backend that rotates the gathered parts, or hands every rank the part at
// offset 0, is caught.
TEST(Collectives, VCollectivesExact) {
  comm::Communicator& real = *g_comm;
  int ran = 0;
  for (const auto coll : {comm::Collective::kAllgatherv, comm::Collective::kReduceScatterV}) {
    const auto& def = bench::collective_def(coll);
    const auto ops = comm::is_reduction(coll) ? comm::all_ops() : std::vector<comm::ReduceOp>{comm::ReduceOp::kSum};
    for (const auto dtype : comm::all_dtypes())
      for (const auto op : ops) {
        if (!real.unsupported_reason(coll, dtype, op).empty()) continue;
        for (const char* kind : {"uniform", "skewed", "random:5"})
          for (const std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7} * real.size() + 3,
                                           std::int64_t{4096}}) {
            bench::CollArgs a;
            a.comm = &real;
            a.dtype = dtype;
            a.op = op;
            a.rank = real.rank();
            a.nranks = real.size();
            a.count = count;
            a.seed = 17 + static_cast<std::uint64_t>(count);
            a.vsplit = bench::parse_vsplit(kind);
            const std::string what = fmt::format("{} {} {} {} count {}", comm::to_string(coll),
                                                 comm::to_string(dtype), comm::to_string(op), kind, count);
            EXPECT_EQ(bench::run_and_count_wrong(def, a, false), 0) << what;
            ++ran;
          }
      }
    // The check catches misrouted parts (skewed: every part a different size).
    if (real.size() < 2) continue;
    Misrouting bad(real);
    bench::CollArgs a;
    a.comm = &bad;
    a.rank = real.rank();
    a.nranks = real.size();
    a.count = 4096;
    a.seed = 3;
    a.vsplit = bench::parse_vsplit("skewed");
    std::int64_t mine = bench::run_and_count_wrong(def, a, false);
    at::Tensor wrong = at::full({1}, mine, at::kLong);
    real.allreduce(wrong, wrong, comm::ReduceOp::kSum)->wait(real.timeout());
    EXPECT_GT(wrong.item<std::int64_t>(), 1000) << comm::to_string(coll);
  }
  // Every float and integer type on both: at least the float32 sum of each,
  // in every kind and count.
  EXPECT_GE(ran, 2 * 3 * 4);
  if (real.rank() == 0) fmt::print("{}: {} ranks: {} v-collective cases exact\n", real.backend(), real.size(), ran);
}

// bool (gloo in LibTorch 2.x, mpi, nccl) and float8 (nccl only): every
// collective and op a backend takes is exact, its refusals name the type,
// and the test data is not trivially all true (or all the same).
TEST(Collectives, BoolAndFloat8) {
  comm::Communicator& real = *g_comm;
  int ran = 0;
  for (const auto coll : comm::all_collectives()) {
    if (coll == comm::Collective::kBarrier) continue;
    const auto& def = bench::collective_def(coll);
    const auto ops = comm::is_reduction(coll) ? comm::all_ops() : std::vector<comm::ReduceOp>{comm::ReduceOp::kSum};
    for (const auto dtype : {comm::DType::kBool, comm::DType::kFloat8E4M3, comm::DType::kFloat8E5M2})
      for (const auto op : ops) {
        const std::string why = real.unsupported_reason(coll, dtype, op);
        if (comm::is_float8(dtype) && real.backend() != "nccl") {
          EXPECT_FALSE(why.empty()) << comm::to_string(coll) << " " << comm::to_string(dtype);
        }
        if (!why.empty()) continue;
        for (const std::int64_t per_rank : {std::int64_t{1}, std::int64_t{13}, std::int64_t{1001}})
          for (const bool in_place : {false, true}) {
            if (in_place && def.in_place == bench::InPlace::kNone) continue;
            bench::CollArgs a;
            a.comm = &real;
            a.dtype = dtype;
            a.op = op;
            a.root = real.size() - 1;
            a.rank = real.rank();
            a.nranks = real.size();
            a.count = def.splits ? per_rank * real.size() : per_rank;
            a.seed = 300 + static_cast<std::uint64_t>(per_rank);
            EXPECT_EQ(bench::run_and_count_wrong(def, a, in_place), 0)
                << comm::to_string(coll) << " " << comm::to_string(dtype) << " " << comm::to_string(op) << " count "
                << a.count << (in_place ? " in place" : "");
            ++ran;
          }
      }
  }
  // A refusal of the type itself names it (where no other reason, as a
  // 1-rank sendrecv's, comes first).
  if (real.backend() != "nccl")
    for (const auto dtype : {comm::DType::kFloat8E4M3, comm::DType::kFloat8E5M2}) {
      const std::string why = real.unsupported_reason(comm::Collective::kAllgather, dtype, comm::ReduceOp::kSum);
      EXPECT_NE(why.find(comm::to_string(dtype)), std::string::npos) << why;
    }
  const bool bool_ok =
      real.unsupported_reason(comm::Collective::kAllreduce, comm::DType::kBool, comm::ReduceOp::kSum).empty();
  // gloo of LibTorch 1.13 alone has no bool.
  EXPECT_EQ(bool_ok, real.backend() != "gloo" || compat::torch_version()[0] != '1');
  if (real.rank() == 0) fmt::print("{}: {} ranks: {} bool/float8 cases exact\n", real.backend(), real.size(), ran);
  if (!bool_ok || real.size() < 2) return;
  // The data is not trivial: or and and over the ranks each give both values
  // (about half and half), and a swapped allgather chunk is caught.
  for (const auto op : {comm::ReduceOp::kSum, comm::ReduceOp::kMin}) {
    bench::CollArgs a;
    a.dtype = comm::DType::kBool;
    a.op = op;
    a.nranks = real.size();
    a.count = 1000;
    a.seed = 9;
    const auto trues = bench::collective_def(comm::Collective::kAllreduce).expected(a).sum().item<std::int64_t>();
    EXPECT_GT(trues, 200) << comm::to_string(op);
    EXPECT_LT(trues, 800) << comm::to_string(op);
  }
  Misrouting bad(real);
  bench::CollArgs a;
  a.comm = &bad;
  a.dtype = comm::DType::kBool;
  a.rank = real.rank();
  a.nranks = real.size();
  a.count = 1024 * real.size();
  a.seed = 4;
  const auto wrong = bench::run_and_count_wrong(bench::collective_def(comm::Collective::kAllgather), a, false);
  EXPECT_GT(wrong, 500) << "a swapped bool chunk went unnoticed";
}

TEST(Collectives, ReduceLeavesOtherRanksOutputsAlone) {
  // Out of place, a non-root's output must stay as it was: a backend that
  // writes the result (or scratch, or its input) there is caught.
  comm::Communicator& real = *g_comm;
  Misrouting bad(real);
  const auto& def = bench::collective_def(comm::Collective::kReduce);
  bench::CollArgs a;
  a.rank = real.rank();
  a.nranks = real.size();
  a.count = 100;
  a.seed = 5;
  a.comm = &real;
  EXPECT_EQ(bench::run_and_count_wrong(def, a, false), 0);
  a.comm = &bad;
  const auto wrong = bench::run_and_count_wrong(def, a, false);
  if (real.rank() != a.root) {
    EXPECT_EQ(wrong, 100) << "an overwritten non-root output went unnoticed";
  } else {
    EXPECT_EQ(wrong, 0);
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
