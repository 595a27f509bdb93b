#include "bench/comm/iteration_stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "stats/stats.h"

namespace dtbench::bench {
namespace {

double lower_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

}  // namespace

double row_time(const std::vector<double>& rank_us, RowTime how) {
  if (rank_us.empty()) throw std::invalid_argument("row_time: no ranks");
  switch (how) {
    case RowTime::kRank0:
      return rank_us[0];
    case RowTime::kMin:
      return *std::min_element(rank_us.begin(), rank_us.end());
    case RowTime::kMax:
      return *std::max_element(rank_us.begin(), rank_us.end());
    case RowTime::kAverage:
      break;
  }
  double sum = 0;
  for (double x : rank_us) sum += x;
  return sum / static_cast<double>(rank_us.size());
}

const char* row_time_words(RowTime how) {
  switch (how) {
    case RowTime::kRank0:
      return "the group's first rank's mean (-a 0)";
    case RowTime::kMin:
      return "the fastest rank's mean (-a 2)";
    case RowTime::kMax:
      return "the slowest rank's mean (-a 3)";
    case RowTime::kAverage:
      break;
  }
  return "the mean over the ranks (-a 1)";
}

IterationAnalysis analyse_iterations(const std::vector<RankIterations>& ranks, const std::vector<double>& qs,
                                     double spike_mad, double clock_error_us, double ops_per_sample) {
  if (ranks.empty() || ranks[0].time_us.empty()) throw std::invalid_argument("analyse_iterations: no samples");
  const std::size_t iters = ranks[0].time_us.size();
  for (const auto& r : ranks)
    if (r.time_us.size() != iters || r.start_us.size() != iters)
      throw std::invalid_argument("analyse_iterations: ranks with different iteration counts");

  IterationAnalysis a;
  std::vector<double> pooled;
  pooled.reserve(ranks.size() * iters);
  for (const auto& r : ranks) pooled.insert(pooled.end(), r.time_us.begin(), r.time_us.end());
  std::sort(pooled.begin(), pooled.end());
  for (double q : qs) a.percentile_us.push_back(stats::percentile(pooled, q));

  // Lateness per rank: median over iterations of start - lower-median start.
  const std::size_t n = ranks.size();
  std::vector<std::vector<double>> late(n);
  std::vector<double> starts(n);
  for (std::size_t i = 0; i < iters; ++i) {
    for (std::size_t r = 0; r < n; ++r) starts[r] = ranks[r].start_us[i];
    const double mid = lower_median(starts);
    for (std::size_t r = 0; r < n; ++r) late[r].push_back(starts[r] - mid);
  }
  for (std::size_t r = 0; r < n; ++r) {
    a.lateness_us.push_back(stats::median(late[r]));
    if (a.late_rank < 0 || a.lateness_us[r] > a.late_us) {
      a.late_rank = static_cast<int>(r);
      a.late_us = a.lateness_us[r];
    }
  }
  // The collective's own time: the smallest rank median (the late rank's,
  // which did not wait); the others' include the wait for it. A whole
  // sample's, as the lateness is.
  double own = stats::median(ranks[0].time_us);
  for (const auto& r : ranks) own = std::min(own, stats::median(r.time_us));
  own *= ops_per_sample;
  a.straggler = n > 1 && a.late_us > std::max({2 * clock_error_us, 0.5 * own, 10.0});

  // Spikes per rank.
  for (std::size_t r = 0; r < n; ++r) {
    const auto& t = ranks[r].time_us;
    const double med = stats::median(t);
    std::vector<double> dev;
    for (double x : t) dev.push_back(std::abs(x - med));
    const double sigma = std::max(1.4826 * stats::median(dev), 0.02 * med);
    const double limit = med + spike_mad * sigma;
    for (std::size_t i = 0; i < iters; ++i) {
      if (!(t[i] > limit)) continue;
      ++a.spikes;
      if (a.spike_list.size() < kMaxSpikesListed)
        a.spike_list.push_back({static_cast<int>(r), static_cast<int>(i), t[i]});
    }
  }
  return a;
}

std::int64_t barrier_violations(const std::vector<RankIterations>& ranks, double clock_error_us) {
  std::size_t iters = 0;
  for (const auto& r : ranks) iters = std::max(iters, std::min(r.start_us.size(), r.time_us.size()));
  std::int64_t bad = 0;
  for (std::size_t i = 0; i < iters; ++i) {
    double last_in = -1e300, first_out = 1e300;
    for (const auto& r : ranks) {
      if (i >= r.start_us.size() || i >= r.time_us.size()) continue;
      last_in = std::max(last_in, r.start_us[i]);
      first_out = std::min(first_out, r.start_us[i] + r.time_us[i]);
    }
    if (first_out < last_in - 2 * clock_error_us) ++bad;
  }
  return bad;
}

}  // namespace dtbench::bench
