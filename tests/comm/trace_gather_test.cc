// --trace's collection (trace/collect) on real ranks: every rank's events
// reach rank 0 on its clock, and only rank 0 receives them (the others
// would each hold every rank's events: ~0.8 GB at 256 ranks x 1,000
// iterations). A wrapper counts what each rank's allgathers and gathers
// bring it.
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "support/misrouting_communicator.h"
#include "trace/collect.h"

namespace dtbench::trace {
namespace {

// Routes as the real communicator; counts the elements each call lands here.
class Counting : public testing::Misrouting {
 public:
  using Misrouting::Misrouting;
  comm::WorkPtr allgather(const at::Tensor& in, at::Tensor& out) override {
    received += out.numel();
    return real().allgather(in, out);
  }
  comm::WorkPtr gather(const at::Tensor& in, at::Tensor& out, int root) override {
    if (rank() == root) received += out.numel();
    return real().gather(in, out, root);
  }
  std::int64_t received = 0;
};

TEST(TraceGather, EveryRanksEventsReachRankZeroAlone) {
  Counting comm(testing::test_comm());
  const int me = comm.rank(), n = comm.size();
  std::vector<Event> mine;
  for (int i = 0; i < 1000; ++i) {  // 8,000 doubles per rank
    Event e;
    e.kind = EventKind::kCollective;
    e.iteration = i;
    e.bucket = me;
    e.begin_us = 100.0 * i;
    e.end_us = 100.0 * i + 10;
    mine.push_back(e);
  }
  // Rank r's clock: offset 1000 r µs at its time 0, drifting 100 r ppm.
  const auto got = gather_timelines(comm, mine, me, ClockEstimate{1000.0 * me, 0, 0, 100.0 * me, 1e6});
  if (me == 0) {
    ASSERT_EQ(static_cast<int>(got.ranks.size()), n);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(got.ranks[r].events.size(), 1000u);
      EXPECT_DOUBLE_EQ(got.clocks[r].drift_ppm, 100.0 * r);  // every part of the estimate arrives
      EXPECT_DOUBLE_EQ(got.clocks[r].span_us, 1e6);
      EXPECT_EQ(got.ranks[r].events[7].bucket, r);
      // Moved onto rank 0's clock by the offset at the event's own time.
      EXPECT_NEAR(got.ranks[r].events[7].begin_us, 700.0 + 1000.0 * r + 100e-6 * r * 700.0, 1e-9);
      EXPECT_NEAR(got.ranks[r].events[900].end_us, 90010.0 + 1000.0 * r + 100e-6 * r * 90010.0, 1e-9);
    }
  } else {
    EXPECT_TRUE(got.ranks.empty());
    EXPECT_LE(comm.received, 4 * n) << "a rank other than 0 received every rank's events";
  }
}

}  // namespace
}  // namespace dtbench::trace
