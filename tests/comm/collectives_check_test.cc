// The check catches what a broken backend does: misrouted chunks, stale
// inputs of operations in flight, a barrier that lets ranks out early, parts
// in the wrong order. Each wrapper breaks one thing on a real backend; the
// real backend stays exact. Part of collectives_test (its main() is in
// collectives_test.cc).
#include <algorithm>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bench/comm/buffers.h"
#include "bench/comm/collective.h"
#include "bench/comm/comm_bench.h"
#include "bench/comm/data.h"
#include "comm/communicator.h"
#include "support/misrouting_communicator.h"

namespace dtbench {
namespace {

using testing::Misrouting;
using testing::test_comm;

TEST(Collectives, MisroutedChunksAreCaught) {
  comm::Communicator& real = test_comm();
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
  comm::Communicator& real = test_comm();
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
  comm::Communicator& real = test_comm();
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
  comm::Communicator& real = test_comm();
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
  comm::Communicator& real = test_comm();
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
}  // namespace
}  // namespace dtbench
