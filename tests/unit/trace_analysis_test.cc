// The --trace analysis on literal event lists: merged intervals, overlap,
// exposed communication, idle, waiting and moving, bucket delays and
// stragglers. The recorder and the trace file: trace_file_test.cc.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "trace/analysis.h"
#include "trace/chrome_trace.h"
#include "trace/observer.h"
#include "trace/timeline.h"
#include "unit/trace_events.h"

namespace dtbench::trace {
namespace {

using testing::of;
using testing::one_rank;
using testing::phase;


TEST(TraceIntervals, MergeJoinsNestedTouchingAndOverlapping) {
  const auto m = merge({{5, 6}, {0, 2}, {1, 3}, {3, 4}, {10, 12}, {10.5, 11}, {7, 7}});
  ASSERT_EQ(m.size(), 3u);
  EXPECT_DOUBLE_EQ(m[0].begin, 0);
  EXPECT_DOUBLE_EQ(m[0].end, 4);  // [0,2] ∪ [1,3] ∪ touching [3,4]
  EXPECT_DOUBLE_EQ(m[1].begin, 5);
  EXPECT_DOUBLE_EQ(m[2].end, 12);  // nested [10.5,11] inside
  EXPECT_DOUBLE_EQ(length(m), 4 + 1 + 2);  // the empty [7,7] is dropped
}

TEST(TraceIntervals, IntersectionOfDisjointNestedAndPartial) {
  EXPECT_DOUBLE_EQ(intersection({{0, 1}}, {{2, 3}}), 0);
  EXPECT_DOUBLE_EQ(intersection({{0, 10}}, {{2, 3}, {5, 6}}), 2);
  EXPECT_DOUBLE_EQ(intersection({{0, 4}, {6, 10}}, {{3, 7}}), 2);
  EXPECT_DOUBLE_EQ(intersection({}, {{0, 1}}), 0);
}

TEST(TraceIntervals, SubtractCutsHolesAndEnds) {
  const auto d = subtract({{0, 10}, {20, 30}}, {{2, 3}, {5, 6}, {9, 21}, {29, 40}});
  ASSERT_EQ(d.size(), 4u);
  EXPECT_DOUBLE_EQ(d[0].begin, 0);
  EXPECT_DOUBLE_EQ(d[0].end, 2);
  EXPECT_DOUBLE_EQ(d[1].begin, 3);
  EXPECT_DOUBLE_EQ(d[2].end, 9);
  EXPECT_DOUBLE_EQ(d[3].begin, 21);
  EXPECT_DOUBLE_EQ(d[3].end, 29);
  EXPECT_DOUBLE_EQ(length(subtract({{0, 5}}, {})), 5);
  EXPECT_DOUBLE_EQ(length(subtract({{0, 5}}, {{0, 5}})), 0);
}

// A blocking collective (MPI: the call returns when the allreduce is done)
// launched from a gradient hook inside backward 0-30: the call held the
// thread 10-15, so nothing computed then. compute 25, comm 5, overlapped 0,
// exposed 5 (the phase spans alone said 100 % overlapped). The same
// collective launched without blocking (the call returned at once) is
// hidden by the compute around it.
TEST(TraceBreakdown, ABlockingCollectiveIsNotOverlapped) {
  RankTimeline t;
  t.events = {of(EventKind::kIteration, 0, 30), phase(Phase::kBackward, 0, 30),
              of(EventKind::kBackwardCompute, 0, 30), of(EventKind::kCollective, 10, 15, 0),
              of(EventKind::kInCall, 10, 15, 0)};
  auto b = breakdown(t)[0];
  EXPECT_DOUBLE_EQ(b.compute, 25);
  EXPECT_DOUBLE_EQ(b.comm, 5);
  EXPECT_DOUBLE_EQ(b.overlapped, 0);
  EXPECT_DOUBLE_EQ(b.exposed, 5);
  EXPECT_DOUBLE_EQ(b.idle, 0);
  EXPECT_DOUBLE_EQ(bucket_stats({t})[0].hidden, 0);
  t.events.back().end_us = 10.01;  // returned after 0.01: all but that hidden
  b = breakdown(t)[0];
  EXPECT_NEAR(b.overlapped, 4.99, 1e-9);
  EXPECT_NEAR(b.exposed, 0.01, 1e-9);
}


TEST(TraceBreakdown, OverlapExposedAndIdle) {
  const auto b = breakdown(one_rank());
  ASSERT_EQ(b.size(), 1u);
  EXPECT_DOUBLE_EQ(b[0].wall, 100);
  EXPECT_DOUBLE_EQ(b[0].compute, 20 + 30 + 10);  // forward, backward's compute, optimizer
  EXPECT_DOUBLE_EQ(b[0].comm, 45);               // [30, 75]
  EXPECT_DOUBLE_EQ(b[0].overlapped, 20);         // [30, 50]
  EXPECT_DOUBLE_EQ(b[0].exposed, 25);
  EXPECT_DOUBLE_EQ(b[0].idle, 100 - (60 + 45 - 20));  // 75-80 and 90-100
  EXPECT_NEAR(b[0].overlap(), 20.0 / 45, 1e-12);
}

// Idle named by where it lies: forward 0-10, --inject-delay's sleep 10-30,
// backward 30-70 computing 30-50 with a collective 55-60, the wait after
// backward 70-80 with nothing in flight, optimizer 80-90, the loop 90-100.
TEST(TraceBreakdown, IdleNamedByWhereItLies) {
  RankTimeline t;
  t.events = {of(EventKind::kIteration, 0, 100),      phase(Phase::kForward, 0, 10),
              phase(Phase::kDelay, 10, 30),            phase(Phase::kBackward, 30, 70),
              of(EventKind::kBackwardCompute, 30, 50), of(EventKind::kCollective, 55, 60, 0),
              phase(Phase::kCommWait, 70, 80),         phase(Phase::kOptimizer, 80, 90)};
  const auto b = breakdown(t)[0];
  EXPECT_DOUBLE_EQ(b.idle, 55);
  EXPECT_DOUBLE_EQ(b.idle_delay, 20);
  EXPECT_DOUBLE_EQ(b.idle_in_backward, 15);  // 50-55 and 60-70
  EXPECT_DOUBLE_EQ(b.idle_in_comm_wait, 10);
  EXPECT_DOUBLE_EQ(b.idle_between, 10);
  const auto o = breakdown(one_rank())[0];  // 75-80 in the wait, 90-100 after the optimizer
  EXPECT_DOUBLE_EQ(o.idle_in_comm_wait, 5);
  EXPECT_DOUBLE_EQ(o.idle_between, 10);
  EXPECT_DOUBLE_EQ(o.idle_in_backward + o.idle_delay, 0);
}

TEST(TraceBreakdown, WithoutBackwardComputeTheWholeBackwardIsCompute) {
  auto t = one_rank();
  t.events.erase(t.events.begin() + 3);
  const auto b = breakdown(t);
  EXPECT_DOUBLE_EQ(b[0].compute, 20 + 40 + 10);
  EXPECT_DOUBLE_EQ(b[0].overlapped, 30);  // [30, 60]
}

TEST(TraceBreakdown, SyncShapeHasNoOverlap) {
  RankTimeline t;
  t.events = {of(EventKind::kIteration, 0, 100), phase(Phase::kForward, 0, 30),
              phase(Phase::kBackward, 30, 60), phase(Phase::kCommWait, 60, 90),
              of(EventKind::kCollective, 61, 89, 0), phase(Phase::kOptimizer, 90, 100)};
  const auto s = summarize(breakdown(t));
  EXPECT_DOUBLE_EQ(s.overlap, 0);
  EXPECT_DOUBLE_EQ(s.exposed_p50, 28);
  EXPECT_DOUBLE_EQ(s.idle_p50, 2);
}

TEST(TraceBuckets, ReadyToLaunchDurationAndHidden) {
  const auto s = bucket_stats({one_rank()});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0].ready_to_launch_p50, 2);
  EXPECT_DOUBLE_EQ(s[0].duration_p50, 25);
  EXPECT_DOUBLE_EQ(s[0].hidden, 20.0 / 25);  // 30-50 of 30-55
  EXPECT_DOUBLE_EQ(s[1].ready_to_launch_p50, 0);
  EXPECT_DOUBLE_EQ(s[1].hidden, 0);
}

// The bucket that took 18.4 ms on rank 1 but waited 11.1 of them for rank 0
// to launch it: each rank's span split at the last launch. Rank 0 launches
// buckets 0 and 1 at 20 and 40 (done 50, 70); rank 1 launches them at 8.9
// and 45 (done 27.3, 70). Bucket 0: rank 1 waits 20 - 8.9 = 11.1
// and moves 27.3 - 20 = 7.3 (its 18.4 ms); rank 0 waits 0 and moves 30.
// Bucket 1, launched last by rank 1 at 45: rank 0 waits 5 and moves 25,
// rank 1 waits 0 and moves 25. An all-gather only rank 0 saw (no last
// launch) counts as moving.
TEST(TraceBreakdown, CommunicationSplitsIntoWaitingForTheLastLaunchAndMoving) {
  RankTimeline r0, r1;
  r0.rank = 0;
  r1.rank = 1;
  r0.events = {of(EventKind::kIteration, 0, 200), of(EventKind::kCollective, 20, 50, 0),
               of(EventKind::kCollective, 40, 70, 1), of(EventKind::kAllGather, 100, 104, 0)};
  r1.events = {of(EventKind::kIteration, 0, 200), of(EventKind::kCollective, 8.9, 27.3, 0),
               of(EventKind::kCollective, 45, 70, 1)};
  const auto last = last_launches({r0, r1});
  ASSERT_EQ(last.size(), 2u);  // the all-gather: rank 0's alone
  const auto b0 = breakdown(r0, last)[0], b1 = breakdown(r1, last)[0];
  // Rank 0: comm [20, 70] and [100, 104] = 54; waiting [40, 45] is moving
  // for bucket 0 (20-50), so nothing is only waiting.
  EXPECT_DOUBLE_EQ(b0.comm, 54);
  EXPECT_DOUBLE_EQ(b0.comm_waiting, 0);
  EXPECT_DOUBLE_EQ(b0.comm_moving, 54);
  // Rank 1: comm [8.9, 27.3] and [45, 70] = 43.4; waiting [8.9, 20] = 11.1.
  EXPECT_NEAR(b1.comm, 43.4, 1e-9);
  EXPECT_NEAR(b1.comm_waiting, 11.1, 1e-9);
  EXPECT_NEAR(b1.comm_moving, 32.3, 1e-9);
  // Without the other ranks' launches: all moving.
  EXPECT_DOUBLE_EQ(breakdown(r1)[0].comm_waiting, 0);
  // Per bucket, medians over the two ranks.
  const auto s = bucket_stats({r0, r1});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_NEAR(s[0].waiting_p50, (0 + 11.1) / 2, 1e-9);
  EXPECT_NEAR(s[0].moving_p50, (30 + 7.3) / 2, 1e-9);
  EXPECT_NEAR(s[1].waiting_p50, (5 + 0) / 2.0, 1e-9);
  EXPECT_NEAR(s[1].moving_p50, 25, 1e-9);
  const auto sum = summarize({b0, b1});
  EXPECT_NEAR(sum.comm_waiting_p50, 11.1 / 2, 1e-9);
}

// FSDP gathers a unit in forward and again in backward: each launch is
// split at its own last launch. Forward at 100 on both ranks; backward at
// 150 (rank 0) and 160 (rank 1), done at 170: rank 0 waits 10 of its 20.
TEST(TraceBreakdown, AUnitGatheredTwiceIsSplitAtEachLastLaunch) {
  RankTimeline r0, r1;
  r1.rank = 1;
  r0.events = {of(EventKind::kIteration, 0, 200), of(EventKind::kAllGather, 100, 110, 0),
               of(EventKind::kAllGather, 150, 170, 0)};
  r1.events = {of(EventKind::kIteration, 0, 200), of(EventKind::kAllGather, 100, 110, 0),
               of(EventKind::kAllGather, 160, 170, 0)};
  const auto last = last_launches({r0, r1});
  ASSERT_EQ(last.size(), 2u);
  const auto b0 = breakdown(r0, last)[0];
  EXPECT_DOUBLE_EQ(b0.comm, 30);
  EXPECT_DOUBLE_EQ(b0.comm_waiting, 10);
  EXPECT_DOUBLE_EQ(breakdown(r1, last)[0].comm_waiting, 0);
}

TEST(TraceStragglers, OneRankNamesNobody) {
  const auto s = stragglers({one_rank()});
  EXPECT_FALSE(s.worst.has_value());
  EXPECT_EQ(s.collectives, 2);
}

TEST(TraceStragglers, TheLateRankIsNamedPerRankAndPerNode) {
  std::vector<RankTimeline> ranks;
  for (int r = 0; r < 4; ++r) {
    RankTimeline t;
    t.rank = r;
    t.node = r / 2;
    for (int it = 0; it < 3; ++it)
      for (int b = 0; b < 2; ++b) {
        // Rank 3 launches 50 ms late; rank 1 0.1 ms late.
        const double late = r == 3 ? 50000 : r == 1 ? 100 : 0;
        t.events.push_back(of(EventKind::kCollective, it * 1e6 + b * 1000 + late, it * 1e6 + b * 1000 + late + 10, b, it));
      }
    ranks.push_back(t);
  }
  const auto s = stragglers(ranks);
  EXPECT_EQ(s.collectives, 6);
  ASSERT_TRUE(s.worst.has_value());
  EXPECT_EQ(*s.worst, 3);
  EXPECT_DOUBLE_EQ(s.ranks[3].last_share, 1);
  EXPECT_DOUBLE_EQ(s.ranks[3].mean_late_us, 50000);
  EXPECT_DOUBLE_EQ(s.ranks[1].mean_late_us, 100);
  ASSERT_EQ(s.nodes.size(), 2u);
  EXPECT_DOUBLE_EQ(s.nodes[1].mean_late_us, 25000);
  EXPECT_DOUBLE_EQ(s.nodes[1].last_share, 1);
  EXPECT_NE(s.verdict.find("rank 3"), std::string::npos);
}

// Lateness by cause: rank 1 starts each iteration 10 ms after rank 0, has
// each bucket ready 30 ms later into its iteration (slower compute) and
// launches it 5 ms after ready where rank 0 launches at once: 45 ms late,
// 10 + 30 + 5, and the verdict names the middle part.
TEST(TraceStragglers, LatenessSplitsIntoStartComputeAndReadyToLaunch) {
  std::vector<RankTimeline> ranks(2);
  for (int r = 0; r < 2; ++r) {
    ranks[r].rank = r;
    for (int it = 0; it < 3; ++it) {
      const double start = it * 1e6 + (r == 1 ? 10000 : 0);
      ranks[r].events.push_back(of(EventKind::kIteration, start, start + 500000, -1, it));
      for (int b = 0; b < 2; ++b) {
        const double ready = start + 20000 + b * 1000 + (r == 1 ? 30000 : 0);
        const double launch = ready + (r == 1 ? 5000 : 0);
        ranks[r].events.push_back(of(EventKind::kBucketReady, ready, ready, b, it));
        ranks[r].events.push_back(of(EventKind::kCollective, launch, launch + 100, b, it));
      }
    }
  }
  const auto s = stragglers(ranks);
  ASSERT_TRUE(s.worst.has_value());
  EXPECT_EQ(*s.worst, 1);
  const auto& l = s.ranks[1];
  EXPECT_NEAR(l.mean_late_us, 45000, 1e-6);
  EXPECT_NEAR(l.mean_start_skew_us, 10000, 1e-6);
  EXPECT_NEAR(l.mean_compute_us, 30000, 1e-6);
  EXPECT_NEAR(l.mean_ready_to_launch_us, 5000, 1e-6);
  EXPECT_NEAR(s.ranks[0].mean_compute_us, 0, 1e-6);
  EXPECT_NE(s.verdict.find("mostly because it reached each bucket's ready mark later into its iteration (30.0 ms"),
            std::string::npos)
      << s.verdict;
}

TEST(TraceStragglers, LatenessSmallAgainstTheIterationNamesNobody) {
  // Rank 1 is always 20 ms late, but iterations take 1 s: 2% is not a straggler.
  std::vector<RankTimeline> ranks(2);
  ranks[1].rank = 1;
  for (int it = 0; it < 3; ++it)
    for (int r = 0; r < 2; ++r) {
      ranks[r].events.push_back(of(EventKind::kIteration, it * 1e6, (it + 1) * 1e6, -1, it));
      ranks[r].events.push_back(of(EventKind::kCollective, it * 1e6 + r * 20000, it * 1e6 + 30000, 0, it));
    }
  auto s = stragglers(ranks);
  EXPECT_FALSE(s.worst.has_value()) << s.verdict;
  EXPECT_NE(s.verdict.find("2.0% of an iteration"), std::string::npos) << s.verdict;
  // 80 ms late (8%): named.
  for (auto& e : ranks[1].events)
    if (e.kind == EventKind::kCollective) e.begin_us += 60000;
  s = stragglers(ranks);
  ASSERT_TRUE(s.worst.has_value()) << s.verdict;
  EXPECT_EQ(*s.worst, 1);
}

TEST(TraceStragglers, EvenLatenessNamesNobody) {
  std::vector<RankTimeline> ranks(2);
  ranks[1].rank = 1;
  for (int it = 0; it < 4; ++it) {
    // Alternately late by 5 ms: nobody stands out.
    ranks[0].events.push_back(of(EventKind::kCollective, it * 1e6 + (it % 2) * 5000, it * 1e6 + 6000, 0, it));
    ranks[1].events.push_back(of(EventKind::kCollective, it * 1e6 + (1 - it % 2) * 5000, it * 1e6 + 6000, 0, it));
  }
  const auto s = stragglers(ranks);
  EXPECT_FALSE(s.worst.has_value());
  EXPECT_DOUBLE_EQ(s.ranks[0].last_share, 0.5);
}

// A wait on the model's thread inside a compute phase (fsdp's gather before
// a unit's forward) is not compute: forward 0-20 with a 4-8 wait for an
// all-gather 2-8 computes 16 and hides 2 of the gather's 6.
TEST(TraceBreakdown, AWaitInsideAPhaseIsNotCompute) {
  Timeline t(0, 1);
  t.iteration_begin(0);
  t.waited(4, 8);
  t.iteration_end(0);
  const auto recorded = t.events();
  Event wait;
  for (const auto& e : recorded)
    if (e.kind == EventKind::kInCall) wait = e;
  ASSERT_EQ(wait.kind, EventKind::kInCall);
  EXPECT_EQ(wait.sub, 0);
  RankTimeline r;
  r.events = {of(EventKind::kIteration, 0, 20), phase(Phase::kForward, 0, 20), of(EventKind::kAllGather, 2, 8, 1),
              wait};
  const auto b = breakdown(r)[0];
  EXPECT_DOUBLE_EQ(b.compute, 16);
  EXPECT_DOUBLE_EQ(b.comm, 6);
  EXPECT_DOUBLE_EQ(b.overlapped, 2);
  EXPECT_DOUBLE_EQ(b.exposed, 4);
}

// A sharded strategy's all-gathers are communication: an FSDP unit's
// prefetch during the forward is overlapped, the gather it waits for exposed.
TEST(TraceBreakdown, AllGathersAreCommunication) {
  RankTimeline t;
  t.events = {of(EventKind::kIteration, 0, 100), of(EventKind::kAllGather, 0, 10, 1),
              phase(Phase::kForward, 10, 40),    of(EventKind::kAllGather, 20, 30, 0),
              phase(Phase::kBackward, 40, 90),   phase(Phase::kOptimizer, 90, 100)};
  const auto b = breakdown(t);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_DOUBLE_EQ(b[0].comm, 20);
  EXPECT_DOUBLE_EQ(b[0].overlapped, 10);  // [20, 30] under the forward
  EXPECT_DOUBLE_EQ(b[0].exposed, 10);     // [0, 10] before it
}

}  // namespace
}  // namespace dtbench::trace
