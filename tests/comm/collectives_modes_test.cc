// How operations are issued: -m's operations in flight, -z's one at a
// time, --concurrent's communicators at once, counted by a wrapper on a real
// backend. Part of collectives_test (its main() is in collectives_test.cc).
#include <algorithm>
#include <vector>

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

// Allreduces issued and not yet waited for, over one or several
// communicators: how many were open as each was issued, in order (the timed
// loop's first, then the check's).
struct InFlight {
  int open = 0;
  std::vector<int> opens;
  // The most open at once among the first `calls` allreduces.
  int most(std::size_t calls) const {
    const auto end = opens.begin() + static_cast<std::ptrdiff_t>(std::min(calls, opens.size()));
    return opens.begin() == end ? 0 : *std::max_element(opens.begin(), end);
  }
};

// Counts its allreduces into an InFlight shared with others.
class CountsInFlight : public Misrouting {
 public:
  CountsInFlight(comm::Communicator& c, InFlight& n) : Misrouting(c), n_(n) {}
  comm::WorkPtr allreduce(const at::Tensor& in, at::Tensor& out, comm::ReduceOp op) override {
    n_.opens.push_back(++n_.open);
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
  comm::Communicator& real = test_comm();
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
    // Warm-up and timed iterations only: the check keeps as many in flight.
    const auto timed = static_cast<std::size_t>((o.warmup + o.iters) * o.agg_iters);
    ASSERT_GT(n.opens.size(), timed);
    EXPECT_EQ(n.most(timed), blocking ? 1 : 4) << (blocking ? "-z 1" : "-z 0");
  }
}

// --concurrent 2: every operation is issued on both communicators before
// either is waited for (with -z 1 too: -z orders -m's operations, not the
// lanes), both lanes run as often, the check ran on both, and algbw counts
// both messages.
TEST(Collectives, ConcurrentLanesRunAtOnce) {
  comm::Communicator& real = test_comm();
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
    // Warm-up and timed iterations only: the check runs both lanes at once too.
    const auto timed = static_cast<std::size_t>((o.warmup + o.iters) * o.concurrent);
    ASSERT_GT(n.opens.size(), timed);
    EXPECT_EQ(n.most(timed), 2) << (blocking ? "-z 1" : "-z 0");
    EXPECT_EQ(a.ops(), b.ops());
    EXPECT_EQ(a.ops(), o.warmup + o.iters + 1);  // warm-up, timed, the check
    EXPECT_NEAR(t.algbw_gbs, 2.0 * 4096 / t.time_us / 1e3, 1e-9);
  }
  EXPECT_THROW(bench::run_comm_bench(real, real, {}, o, nullptr), std::exception) << "K - 1 lanes are required";
}

// The timed loop makes no tensor: each window's views are made before it
// (a view costs microseconds of LibTorch work, which a latency row would
// count). With one window, every warm-up and timed call gets the same
// output tensor; the check's calls run on buffers of their own.
class KeepsOutputs : public Misrouting {
 public:
  using Misrouting::Misrouting;
  comm::WorkPtr allreduce(const at::Tensor& in, at::Tensor& out, comm::ReduceOp op) override {
    outs.push_back(out);  // held, so no two calls' tensors share an address
    return real().allreduce(in, out, op);
  }
  std::vector<at::Tensor> outs;
};

TEST(Collectives, WindowViewsAreMadeBeforeTheTimedLoop) {
  comm::Communicator& real = test_comm();
  bench::CommBenchOptions o;
  o.sweep.min_bytes = o.sweep.max_bytes = 4096;  // the largest size: one window
  o.iters = 5;
  o.warmup = 2;
  o.in_place = false;
  o.seed = 1;
  KeepsOutputs keeping(real);
  const auto r = bench::run_comm_bench(real, keeping, {}, o, nullptr);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].out_of_place.wrong, 0);
  ASSERT_GE(keeping.outs.size(), static_cast<std::size_t>(o.warmup + o.iters));
  for (int i = 1; i < o.warmup + o.iters; ++i)
    EXPECT_TRUE(keeping.outs[static_cast<std::size_t>(i)].is_same(keeping.outs[0])) << "call " << i;
}

}  // namespace
}  // namespace dtbench
