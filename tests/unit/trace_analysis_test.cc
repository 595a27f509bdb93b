// The --trace analysis on literal event lists: merged intervals, overlap,
// exposed communication, idle, bucket delays and stragglers.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "trace/analysis.h"
#include "trace/chrome_trace.h"
#include "trace/observer.h"
#include "trace/timeline.h"

namespace dtbench::trace {
namespace {

Event phase(Phase p, double b, double e, int it = 0) {
  Event x;
  x.kind = EventKind::kPhase;
  x.sub = static_cast<int>(p);
  x.iteration = it;
  x.begin_us = b;
  x.end_us = e;
  return x;
}
Event of(EventKind k, double b, double e, int bucket = -1, int it = 0) {
  Event x;
  x.kind = k;
  x.iteration = it;
  x.bucket = bucket;
  x.begin_us = b;
  x.end_us = e;
  x.bytes = 1000;
  return x;
}

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

// Iteration 0..100: forward 0-20, backward 20-60 (last gradient at 50),
// comm wait 60-80, optimizer 80-90; two collectives 30-55 and 50-75.
RankTimeline one_rank() {
  RankTimeline t;
  t.events = {of(EventKind::kIteration, 0, 100),       phase(Phase::kForward, 0, 20),
              phase(Phase::kBackward, 20, 60),          of(EventKind::kBackwardCompute, 20, 50),
              phase(Phase::kCommWait, 60, 80),          phase(Phase::kOptimizer, 80, 90),
              of(EventKind::kBucketReady, 28, 28, 0),   of(EventKind::kCollective, 30, 55, 0),
              of(EventKind::kBucketReady, 50, 50, 1),   of(EventKind::kCollective, 50, 75, 1)};
  return t;
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

TEST(TraceTimeline, RecordsOnlyTheChosenIterationsAndPairsCompletions) {
  Timeline t(1, 1);
  for (int it = 0; it < 3; ++it) {
    t.iteration_begin(it);
    t.phase_begin(Phase::kBackward);
    t.gradient_ready(0);
    t.gradient_ready(1);
    t.collective_launch(0, 64, WireDType::kFloat32, {0, 1});
    t.phase_end(Phase::kBackward);
    t.collective_done(0);
    t.iteration_end(it);
  }
  int iterations = 0, collectives = 0, ready = 0, backward_compute = 0;
  for (const auto& e : t.events()) {
    EXPECT_EQ(e.iteration, 1);
    iterations += e.kind == EventKind::kIteration;
    collectives += e.kind == EventKind::kCollective;
    ready += e.kind == EventKind::kBucketReady;
    backward_compute += e.kind == EventKind::kBackwardCompute;
    EXPECT_GE(e.end_us, e.begin_us);
  }
  EXPECT_EQ(iterations, 1);
  EXPECT_EQ(collectives, 1);
  EXPECT_EQ(ready, 1);
  EXPECT_EQ(backward_compute, 1);
  EXPECT_EQ(t.incomplete(), 0);
}

// The launching call's return marks how long it held the model's thread:
// one kInCall from the launch to the return, for collectives and all-gathers.
TEST(TraceTimeline, LaunchingCallsThatReturnAreRecorded) {
  Timeline t(0, 1);
  t.iteration_begin(0);
  t.collective_launch(3, 64, WireDType::kFloat32, {});
  t.collective_done(3);  // a blocking backend: done before the call returns
  t.collective_returned(3);
  t.gather_launch(1, 32);
  t.gather_returned(1);
  t.gather_done(1);
  t.collective_returned(7);  // never launched: nothing
  t.waited(5, 5);            // an empty wait: nothing
  t.iteration_end(0);
  std::vector<Event> in_call;
  double collective_begin = -1;
  for (const auto& e : t.events()) {
    if (e.kind == EventKind::kInCall) in_call.push_back(e);
    if (e.kind == EventKind::kCollective) collective_begin = e.begin_us;
  }
  ASSERT_EQ(in_call.size(), 2u);
  EXPECT_EQ(in_call[0].bucket, 3);
  EXPECT_EQ(in_call[0].sub, static_cast<int>(EventKind::kCollective));
  EXPECT_DOUBLE_EQ(in_call[0].begin_us, collective_begin);
  EXPECT_GE(in_call[0].end_us, in_call[0].begin_us);
  EXPECT_EQ(in_call[1].bucket, 1);
  EXPECT_EQ(in_call[1].sub, static_cast<int>(EventKind::kAllGather));
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

TEST(TraceTimeline, PackRoundTrips) {
  auto e = of(EventKind::kCollective, 12.5, 99.25, 7, 3);
  e.dtype = 2;
  std::vector<double> v;
  pack(e, v);
  ASSERT_EQ(v.size(), static_cast<std::size_t>(kPackedWidth));
  const auto back = unpack(v.data());
  EXPECT_EQ(back.kind, e.kind);
  EXPECT_EQ(back.bucket, 7);
  EXPECT_EQ(back.iteration, 3);
  EXPECT_DOUBLE_EQ(back.end_us, 99.25);
  EXPECT_EQ(back.dtype, 2);
  EXPECT_EQ(back.bytes, 1000);
}

TEST(ChromeTrace, ProcessesNamedAndCollectivesPaired) {
  auto r = one_rank();
  r.node = 0;
  TraceMeta meta;
  meta.label = "t";
  meta.node_hosts = {"hostA"};
  meta.clocks = {{0, 0}};
  const auto doc = chrome_trace({r}, meta);
  int begins = 0, ends = 0, counters = 0;
  bool named = false;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e["ph"];
    begins += ph == "b";
    ends += ph == "e";
    counters += ph == "C";
    if (ph == "M" && e["name"] == "process_name") named = e["args"]["name"] == "rank 0 (node 0, hostA)";
    EXPECT_EQ(e["pid"], 1);  // rank 0 is process 1: Perfetto reads pid 0 as the idle task
  }
  EXPECT_TRUE(named);
  EXPECT_EQ(begins, 2);
  EXPECT_EQ(ends, 2);
  EXPECT_EQ(counters, 4);
  EXPECT_EQ(doc["otherData"]["run"], "t");
}

// Clocks drift: 20 ppm over a 300-s run is 6 ms, above the 1-ms straggler
// floor. An estimate before (offset 100 µs at 0) and after (6,100 µs at
// 300 s) give 20 ppm; 150 s in the offset is halfway; the larger bound.
TEST(TraceClock, TwoEstimatesGiveTheDriftBetweenThem) {
  const ClockEstimate before{100, 5, 0, 0}, after{6100, 8, 300e6, 0};
  const auto c = interpolate(before, after);
  EXPECT_NEAR(c.drift_ppm, 20, 1e-9);
  EXPECT_DOUBLE_EQ(c.bound_us, 8);
  EXPECT_DOUBLE_EQ(c.span_us, 300e6);
  EXPECT_TRUE(c.drift_beyond_error());  // 6,000 us against 2 x 8
  EXPECT_FALSE(interpolate(ClockEstimate{100, 80, 0, 0}, ClockEstimate{200, 80, 1e6, 0}).drift_beyond_error());
  EXPECT_NEAR(c.offset_at(150e6), 3100, 1e-6);
  EXPECT_NEAR(c.offset_at(300e6), 6100, 1e-6);
  // Estimates under a millisecond apart: no drift from them.
  EXPECT_DOUBLE_EQ(interpolate(ClockEstimate{100, 1, 0, 0}, ClockEstimate{110, 1, 500, 0}).drift_ppm, 0);
}

// Horovod's stages overlap across fused groups (group 2's negotiation runs
// while group 1's buffer is copied): each slice goes to a track where
// nothing else is under it, so Perfetto draws every one whole.
TEST(ChromeTrace, OverlappingHorovodStagesGetTracksOfTheirOwn) {
  RankTimeline r;
  auto stage = [](Stage s, double b, double e, int group) {
    Event x = of(EventKind::kStage, b, e, group);
    x.sub = static_cast<int>(s);
    return x;
  };
  r.events = {of(EventKind::kIteration, 0, 100), stage(Stage::kNegotiate, 0, 40, 1),
              stage(Stage::kMemcpyIn, 30, 50, 1), stage(Stage::kNegotiate, 35, 60, 2),
              stage(Stage::kMemcpyOut, 55, 70, 1)};
  const auto doc = chrome_trace({r}, TraceMeta{});
  std::map<int, std::vector<std::pair<double, double>>> by_tid;
  std::set<int> named;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") named.insert(e["tid"].get<int>());
    if (e.value("cat", "") == "horovod")
      by_tid[e["tid"].get<int>()].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  }
  std::size_t slices = 0;
  for (auto& [tid, spans] : by_tid) {
    EXPECT_TRUE(named.count(tid)) << "track " << tid << " has no name";
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i)
      EXPECT_LE(spans[i - 1].second, spans[i].first) << "overlapping slices on track " << tid;
    slices += spans.size();
  }
  EXPECT_EQ(slices, 4u);
  EXPECT_EQ(by_tid.size(), 3u);  // 0-40 | 30-50 then 55-70 | 35-60
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

TEST(TraceTimeline, AllGathersPairedAcrossThreadsAndCountedIncomplete) {
  Timeline t(0, 1);
  t.iteration_begin(0);
  t.gather_launch(0, 4096);
  t.gather_launch(1, 512);
  t.gather_done(1);
  t.iteration_end(0);
  int gathers = 0;
  for (const auto& e : t.events())
    if (e.kind == EventKind::kAllGather) {
      ++gathers;
      EXPECT_EQ(e.bytes, e.bucket == 0 ? 4096 : 512);
    }
  EXPECT_EQ(gathers, 2);
  EXPECT_EQ(t.incomplete(), 1);  // unit 0's never completed
  // ... and ends at its launch, not before the clock's origin (it ended
  // near -3.4e9 us in the trace file before all-gathers were clamped too).
  for (const auto& e : t.events()) EXPECT_GE(e.end_us, e.begin_us) << "kind " << static_cast<int>(e.kind);
  t.gather_done(0);              // completes late, from a backend's thread
  EXPECT_EQ(t.incomplete(), 0);
  t.iteration_begin(1);  // not recorded
  t.gather_launch(0, 4096);
  t.gather_done(0);
  EXPECT_EQ(t.events().size(), 3u);  // the iteration and its two gathers
}

TEST(ChromeTrace, AllGathersShownOnTheCommunicationThreadWithTheirBytes) {
  RankTimeline r;
  r.events = {of(EventKind::kIteration, 0, 100), of(EventKind::kAllGather, 5, 25, 3)};
  TraceMeta meta;
  meta.label = "t";
  meta.node_hosts = {"hostA"};
  meta.clocks = {{0, 0}};
  const auto doc = chrome_trace({r}, meta);
  int begins = 0, ends = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e.value("cat", "") != "all-gather") continue;
    begins += e["ph"] == "b";
    ends += e["ph"] == "e";
    if (e["ph"] == "b") {
      EXPECT_EQ(e["name"], "all-gather 3");
      EXPECT_EQ(e["args"]["bytes"], 1000);
    }
  }
  EXPECT_EQ(begins, 1);
  EXPECT_EQ(ends, 1);
}

}  // namespace
}  // namespace dtbench::trace
