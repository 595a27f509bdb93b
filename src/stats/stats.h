#pragma once
// Pure summary statistics over samples. No LibTorch, no I/O.
//
// Edge cases (documented contract, tested):
//  - every function taking samples throws std::invalid_argument on an empty
//    vector, except summarize(), which returns count 0 and NaN fields;
//  - percentile(p) uses linear interpolation between closest ranks (numpy's
//    default "linear" method); p outside [0, 100] throws;
//  - stdev is the sample standard deviation (n-1); 0 for one sample.
#include <cstddef>
#include <vector>

namespace dtbench::stats {

double mean(const std::vector<double>& xs);
double stdev(const std::vector<double>& xs);
double percentile(std::vector<double> xs, double p);
double median(const std::vector<double>& xs);
double min(const std::vector<double>& xs);
double max(const std::vector<double>& xs);

struct Summary {
  std::size_t count = 0;
  double mean = 0, stdev = 0, min = 0, max = 0;
  double p50 = 0, p75 = 0, p90 = 0, p95 = 0, p99 = 0;
};
Summary summarize(const std::vector<double>& xs);

// Relative change of `test` against `base` in percent: (test - base) / base * 100.
// Throws std::invalid_argument when base is 0.
double delta_percent(double base, double test);

// Mean and the half-width of mean ± 1.96σ (σ = sample stdev): the band the
// RaySGD/Horovod throughput tables print. Throws on empty input.
struct MeanBand {
  double mean = 0, half_width = 0;
};
MeanBand mean_band_196(const std::vector<double>& xs);

// Scaling efficiency: throughput at n ranks / (n * throughput at 1 rank).
// Throws std::invalid_argument for n < 1 or a non-positive 1-rank throughput.
double scaling_efficiency(double throughput_n, int n, double throughput_1);

}  // namespace dtbench::stats
