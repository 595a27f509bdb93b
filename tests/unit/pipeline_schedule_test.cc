// The pipeline schedules as data (layout/pipeline_schedule.h): each rank's
// order against torch.distributed.pipelining's and Megatron-LM's, every
// (microbatch, chunk) forwarded once and then backwarded once, the peak of
// microbatches in flight against the projection's formula, and the whole
// pipeline run by a simulation with the stages' dependencies: it finishes
// (no schedule waits on itself) in the time the bubble formula says.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "layout/pipeline_schedule.h"
#include "project/layout_model.h"

namespace dtbench::layout {
namespace {

std::string text(const std::vector<PpAction>& actions) {
  std::string out;
  for (const auto& a : actions)
    out += (out.empty() ? "" : " ") + std::string(a.kind == PpAction::kForward ? "F" : "B") +
           std::to_string(a.microbatch) + (a.chunk > 0 ? "c" + std::to_string(a.chunk) : "");
  return out;
}

TEST(PipelineSchedule, GpipeRunsEveryForwardThenEveryBackward) {
  EXPECT_EQ(text(pipeline_actions(PpSchedule::kGpipe, 2, 0, 3, 1)), "F0 F1 F2 B0 B1 B2");
}

// Schedule1F1B's order: P - rank - 1 warm-up forwards, then F and B
// alternating, then the remaining backwards.
TEST(PipelineSchedule, OneFOneBWarmsUpByItsDistanceFromTheEnd) {
  EXPECT_EQ(text(pipeline_actions(PpSchedule::k1f1b, 4, 0, 6, 1)), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  EXPECT_EQ(text(pipeline_actions(PpSchedule::k1f1b, 4, 3, 6, 1)), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
  EXPECT_EQ(text(pipeline_actions(PpSchedule::k1f1b, 4, 1, 2, 1)), "F0 F1 B0 B1");  // fewer microbatches than warm-up
}

// Megatron-LM's interleaved order, P = 2, v = 2, M = 4: microbatches in
// groups of P per chunk; rank 0 warms up with 2(P-1) + (v-1)P = 4 forwards.
TEST(PipelineSchedule, InterleavedGroupsMicrobatchesByThePipelineDepth) {
  EXPECT_EQ(text(pipeline_actions(PpSchedule::kInterleaved1f1b, 2, 0, 4, 2)),
            "F0 F1 F0c1 F1c1 F2 B0c1 F3 B1c1 F2c1 B0 F3c1 B1 B2c1 B3c1 B2 B3");
  EXPECT_EQ(text(pipeline_actions(PpSchedule::kInterleaved1f1b, 2, 1, 4, 2)),
            "F0 F1 F0c1 B0c1 F1c1 B1c1 F2 B0 F3 B1 F2c1 B2c1 F3c1 B3c1 B2 B3");
}

using Shape = std::tuple<PpSchedule, int, int, int>;  // schedule, P, M, v

std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (int p : {2, 3, 4, 8})
    for (int m : {1, 2, 4, 8, 16}) {
      out.emplace_back(PpSchedule::kGpipe, p, m, 1);
      out.emplace_back(PpSchedule::k1f1b, p, m, 1);
      for (int v : {2, 3})
        if (m % p == 0) out.emplace_back(PpSchedule::kInterleaved1f1b, p, m, v);
    }
  return out;
}

TEST(PipelineSchedule, EveryMicrobatchForwardOnceThenBackwardOnceAndThePeakIsTheFormulas) {
  for (const auto& [s, p, m, v] : shapes())
    for (int r = 0; r < p; ++r) {
      const auto actions = pipeline_actions(s, p, r, m, v);
      ASSERT_EQ(actions.size(), static_cast<std::size_t>(2 * m * v));
      std::map<std::pair<int, int>, int> state;  // 1 after F, 2 after B
      for (const auto& a : actions) {
        auto& st = state[{a.microbatch, a.chunk}];
        ASSERT_EQ(st, a.kind == PpAction::kForward ? 0 : 1) << pp_schedule_name(s) << " P" << p << " M" << m;
        st += 1;
      }
      EXPECT_EQ(state.size(), static_cast<std::size_t>(m * v));
      project::LayoutOptions l;
      l.pp = p;
      l.microbatches = m;
      l.stages_per_rank = v;
      l.schedule = s;
      EXPECT_DOUBLE_EQ(peak_in_flight(actions), project::microbatches_in_flight(l, r) * v)
          << pp_schedule_name(s) << " P" << p << " M" << m << " v" << v << " rank " << r;
    }
}

// Every rank runs its actions in order; an action starts when its rank is
// free and what it needs is done (a forward the previous stage's forward of
// the microbatch, a backward the next stage's backward and its own
// forward); sending is free. A forward of one stage costs 1/v, a backward
// 2/v. Returns the makespan, or -1 when the ranks wait on each other
// forever.
double simulate(PpSchedule s, int p, int m, int v) {
  const int stages = p * v;
  std::vector<std::vector<PpAction>> plan;
  for (int r = 0; r < p; ++r) plan.push_back(pipeline_actions(s, p, r, m, v));
  std::map<std::tuple<int, int, int>, double> done;  // (kind, mb, stage) -> end time
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<double> free_at(static_cast<std::size_t>(p), 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < p; ++r) {
      auto& i = next[static_cast<std::size_t>(r)];
      while (i < plan[static_cast<std::size_t>(r)].size()) {
        const auto& a = plan[static_cast<std::size_t>(r)][i];
        const int stage = a.chunk * p + r;
        double ready = free_at[static_cast<std::size_t>(r)];
        auto need = [&](int kind, int st) {
          const auto it = done.find({kind, a.microbatch, st});
          if (it == done.end()) return false;
          ready = std::max(ready, it->second);
          return true;
        };
        const bool ok = a.kind == PpAction::kForward
                            ? stage == 0 || need(PpAction::kForward, stage - 1)
                            : need(PpAction::kForward, stage) && (stage == stages - 1 || need(PpAction::kBackward, stage + 1));
        if (!ok) break;
        const double end = ready + (a.kind == PpAction::kForward ? 1.0 : 2.0) / v;
        done[{a.kind, a.microbatch, stage}] = end;
        free_at[static_cast<std::size_t>(r)] = end;
        ++i;
        moved = true;
      }
    }
  }
  for (int r = 0; r < p; ++r)
    if (next[static_cast<std::size_t>(r)] < plan[static_cast<std::size_t>(r)].size()) return -1;
  return *std::max_element(free_at.begin(), free_at.end());
}

// Each rank's work is 3M (a forward and a backward of all its stages per
// microbatch); the makespan is that plus the bubble, (P-1)·3/v: the
// schedule's bubble share (P-1)/(vM + P-1) exactly.
TEST(PipelineSchedule, EveryScheduleFinishesInItsWorkPlusTheFormulasBubble) {
  for (const auto& [s, p, m, v] : shapes()) {
    const double makespan = simulate(s, p, m, v);
    ASSERT_GT(makespan, 0) << pp_schedule_name(s) << " P" << p << " M" << m << " v" << v << " deadlocks";
    const double work = 3.0 * m;
    EXPECT_NEAR((makespan - work) / makespan, schedule_bubble(p, m, v), 1e-9)
        << pp_schedule_name(s) << " P" << p << " M" << m << " v" << v;
  }
}

TEST(PipelineSchedule, RefusesWhatItCannotRun) {
  EXPECT_EQ(pipeline_refusal(PpSchedule::k1f1b, 2, 4, 1, 8, 4), "");
  EXPECT_NE(pipeline_refusal(PpSchedule::k1f1b, 2, 3, 1, 8, 4).find("does not divide the batch of 8"), std::string::npos);
  EXPECT_NE(pipeline_refusal(PpSchedule::k1f1b, 4, 4, 1, 8, 3).find("more than the model's 3 blocks"), std::string::npos);
  EXPECT_NE(pipeline_refusal(PpSchedule::kInterleaved1f1b, 2, 4, 1, 8, 4).find("--stages-per-rank 2"),
            std::string::npos);
  EXPECT_NE(pipeline_refusal(PpSchedule::kInterleaved1f1b, 4, 6, 2, 12, 8).find("not a multiple"), std::string::npos);
  EXPECT_NE(pipeline_refusal(PpSchedule::kGpipe, 2, 4, 2, 8, 8).find("interleaved-1f1b's"), std::string::npos);
  EXPECT_THROW(pipeline_actions(PpSchedule::k1f1b, 2, 0, 0, 1), UsageError);
  EXPECT_THROW(parse_pp_schedule("zero-bubble"), UsageError);
}

TEST(PipelineSchedule, StagesSplitBlocksEvenlyTheEarlierTakingTheRest) {
  EXPECT_EQ(stage_blocks(10, 4), (std::vector<int>{3, 3, 2, 2}));
  EXPECT_EQ(stage_blocks(4, 4), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(schedule_bubble(4, 8, 1), 3.0 / 11);
  EXPECT_DOUBLE_EQ(schedule_bubble(4, 8, 2), 3.0 / 19);
  EXPECT_DOUBLE_EQ(schedule_bubble(1, 8, 1), 0);
}

}  // namespace
}  // namespace dtbench::layout
