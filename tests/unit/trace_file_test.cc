// The --trace recorder (Timeline), the clock estimates' drift and the
// Chrome trace file, on literal events. The analysis: trace_analysis_test.cc.
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
