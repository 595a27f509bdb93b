// The comm benchmark's per-iteration analysis: percentiles, the late rank
// found by arrival (not by time, which a synchronising collective makes equal
// on every rank), and spikes.
#include "bench/comm/iteration_stats.h"

#include <stdexcept>

#include <gtest/gtest.h>

namespace dtbench::bench {
namespace {

TEST(IterationStats, RowTimeAsNcclTestsDashA) {
  const std::vector<double> us{30, 10, 20};
  EXPECT_DOUBLE_EQ(row_time(us, RowTime::kRank0), 30);
  EXPECT_DOUBLE_EQ(row_time(us, RowTime::kAverage), 20);
  EXPECT_DOUBLE_EQ(row_time(us, RowTime::kMin), 10);
  EXPECT_DOUBLE_EQ(row_time(us, RowTime::kMax), 30);
  EXPECT_THROW(row_time({}, RowTime::kAverage), std::invalid_argument);
}

// n ranks, `iters` iterations 100 us apart; every rank takes `time` us except
// as changed by the test.
std::vector<RankIterations> ranks(int n, int iters, double time) {
  std::vector<RankIterations> out(static_cast<std::size_t>(n));
  for (auto& r : out)
    for (int i = 0; i < iters; ++i) {
      r.start_us.push_back(1e9 + 100.0 * i);
      r.time_us.push_back(time);
    }
  return out;
}

TEST(IterationStats, ALateRankIsNamedByArrivalNotByTime) {
  // Rank 2 of 4 starts 30 us late each iteration; the collective ends on all
  // ranks together, so rank 2's own time is 30 us shorter and the others'
  // are as long as ever: by time rank 2 looks the fastest.
  auto r = ranks(4, 10, 50);
  for (int i = 0; i < 10; ++i) {
    r[2].start_us[static_cast<std::size_t>(i)] += 30;
    r[2].time_us[static_cast<std::size_t>(i)] -= 30;
  }
  const auto a = analyse_iterations(r, {50, 99}, 5, 0);
  EXPECT_EQ(a.late_rank, 2);
  EXPECT_DOUBLE_EQ(a.late_us, 30);
  EXPECT_TRUE(a.straggler);  // 30 > 50 / 2
  EXPECT_EQ(a.lateness_us, (std::vector<double>{0, 0, 30, 0}));
}

TEST(IterationStats, TheThresholdIsTheCollectivesOwnTimeNotTheWaitersTimes) {
  // 8 ranks; rank 3 starts 80 us late; the collective itself takes 100 us,
  // so the 7 others take 180 us (they wait) and rank 3 100 us. Half the
  // pooled p50 (90 us) would hide an 80-us straggler; half the collective's
  // own time (50 us) does not.
  auto r = ranks(8, 10, 180);
  for (int i = 0; i < 10; ++i) {
    r[3].start_us[static_cast<std::size_t>(i)] += 80;
    r[3].time_us[static_cast<std::size_t>(i)] = 100;
  }
  const auto a = analyse_iterations(r, {50}, 5, 0);
  EXPECT_EQ(a.late_rank, 3);
  EXPECT_TRUE(a.straggler);
}

TEST(IterationStats, TwoRanksLateByTheWholeGap) {
  // The lower median: with 2 ranks the late one is late by the gap, not half.
  auto r = ranks(2, 5, 100);
  for (auto& s : r[1].start_us) s += 60;
  const auto a = analyse_iterations(r, {50}, 5, 0);
  EXPECT_EQ(a.late_rank, 1);
  EXPECT_DOUBLE_EQ(a.late_us, 60);
  EXPECT_TRUE(a.straggler);  // 60 > 100 / 2
}

// A sample of -m 4 (or a -G launch of -n x -m operations) is the time per
// operation, but the lateness is the whole sample's: a 60-us skew of a
// sample holding 4 operations of 100 us (400 us) is the collective's own
// skew, not a straggler; of one operation it is one.
TEST(IterationStats, LatenessIsWeighedAgainstAWholeSample) {
  auto r = ranks(2, 5, 100);
  for (auto& s : r[1].start_us) s += 60;
  EXPECT_TRUE(analyse_iterations(r, {50}, 5, 0, 1).straggler);
  EXPECT_FALSE(analyse_iterations(r, {50}, 5, 0, 4).straggler);
}

TEST(IterationStats, JitterAndClockErrorAreNotStragglers) {
  auto r = ranks(2, 5, 100);
  for (auto& s : r[1].start_us) s += 45;  // under half the 100-us time: a collective's own skew
  EXPECT_FALSE(analyse_iterations(r, {50}, 5, 0).straggler);
  auto r2 = ranks(2, 5, 10);
  for (auto& s : r2[1].start_us) s += 30;  // beyond half of 10 us and 10 us, within 2 x 20-us clock error
  EXPECT_FALSE(analyse_iterations(r2, {50}, 5, 20).straggler);
  EXPECT_TRUE(analyse_iterations(r2, {50}, 5, 10).straggler);
  EXPECT_FALSE(analyse_iterations(ranks(1, 5, 10), {50}, 5, 0).straggler);  // one rank: nobody to wait for
}

TEST(IterationStats, PercentilesPoolEveryRanksIterations) {
  auto r = ranks(2, 4, 10);
  r[1].time_us = {20, 20, 20, 20};
  const auto a = analyse_iterations(r, {0, 50, 100}, 5, 0);
  EXPECT_EQ(a.percentile_us, (std::vector<double>{10, 15, 20}));
}

TEST(IterationStats, SpikesBeyondMedianPlusKMad) {
  auto r = ranks(2, 20, 100);
  // Rank 0: a little spread (MAD 1 us), one iteration at 140 us.
  for (std::size_t i = 0; i < 20; ++i) r[0].time_us[i] = 100 + (i % 3 == 0 ? 1.0 : (i % 3 == 1 ? -1.0 : 0.0));
  r[0].time_us[7] = 140;
  // Rank 1: identical samples but one at 104 us: within the 2%-of-median
  // floor (5 * 2 us = 10 us), not a spike.
  r[1].time_us[3] = 104;
  const auto a = analyse_iterations(r, {50}, 5, 0);
  EXPECT_EQ(a.spikes, 1);
  ASSERT_EQ(a.spike_list.size(), 1u);
  EXPECT_EQ(a.spike_list[0].rank, 0);
  EXPECT_EQ(a.spike_list[0].iter, 7);
  EXPECT_DOUBLE_EQ(a.spike_list[0].us, 140);
  // A tighter k finds rank 1's too.
  EXPECT_EQ(analyse_iterations(r, {50}, 1, 0).spikes, 2);
}

TEST(IterationStats, BadInputThrows) {
  EXPECT_THROW(analyse_iterations({}, {50}, 5, 0), std::invalid_argument);
  auto r = ranks(2, 3, 10);
  r[1].time_us.pop_back();
  EXPECT_THROW(analyse_iterations(r, {50}, 5, 0), std::invalid_argument);
  EXPECT_THROW(analyse_iterations(ranks(2, 3, 10), {101}, 5, 0), std::invalid_argument);
}

}  // namespace
}  // namespace dtbench::bench
