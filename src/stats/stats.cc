#include "stats/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace dtbench::stats {
namespace {

void require_nonempty(const std::vector<double>& xs, const char* fn) {
  if (xs.empty()) throw std::invalid_argument(std::string(fn) + ": no samples");
}

}  // namespace

double mean(const std::vector<double>& xs) {
  require_nonempty(xs, "mean");
  return std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

double stdev(const std::vector<double>& xs) {
  require_nonempty(xs, "stdev");
  if (xs.size() == 1) return 0.0;
  const double m = mean(xs);
  double ss = 0;
  for (double x : xs) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(xs.size() - 1));
}

double percentile(std::vector<double> xs, double p) {
  require_nonempty(xs, "percentile");
  if (!(p >= 0 && p <= 100)) throw std::invalid_argument("percentile: p must be in [0, 100]");
  std::sort(xs.begin(), xs.end());
  const double rank = p / 100.0 * static_cast<double>(xs.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = static_cast<std::size_t>(std::ceil(rank));
  const double frac = rank - static_cast<double>(lo);
  return xs[lo] + (xs[hi] - xs[lo]) * frac;
}

double median(const std::vector<double>& xs) { return percentile(xs, 50); }

double min(const std::vector<double>& xs) {
  require_nonempty(xs, "min");
  return *std::min_element(xs.begin(), xs.end());
}

double max(const std::vector<double>& xs) {
  require_nonempty(xs, "max");
  return *std::max_element(xs.begin(), xs.end());
}

Summary summarize(const std::vector<double>& xs) {
  Summary s;
  s.count = xs.size();
  if (xs.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    s.mean = s.stdev = s.min = s.max = s.p50 = s.p75 = s.p90 = s.p95 = s.p99 = nan;
    return s;
  }
  s.mean = mean(xs);
  s.stdev = stdev(xs);
  s.min = min(xs);
  s.max = max(xs);
  std::vector<double> sorted = xs;
  std::sort(sorted.begin(), sorted.end());
  s.p50 = percentile(sorted, 50);
  s.p75 = percentile(sorted, 75);
  s.p90 = percentile(sorted, 90);
  s.p95 = percentile(sorted, 95);
  s.p99 = percentile(sorted, 99);
  return s;
}

double delta_percent(double base, double test) {
  if (base == 0) throw std::invalid_argument("delta_percent: base is 0");
  return (test - base) / base * 100.0;
}

MeanBand mean_band_196(const std::vector<double>& xs) {
  return {mean(xs), 1.96 * stdev(xs)};
}

double scaling_efficiency(double throughput_n, int n, double throughput_1) {
  if (n < 1) throw std::invalid_argument("scaling_efficiency: rank count must be at least 1");
  if (!(throughput_1 > 0))
    throw std::invalid_argument("scaling_efficiency: 1-rank throughput must be positive");
  return throughput_n / (n * throughput_1);
}

}  // namespace dtbench::stats
