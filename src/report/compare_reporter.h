#pragma once
// Console tables of `dtbench compare`: per bucket size, one table per phase
// (mean, p50, p90, p95, p99 with delta% against the baseline reducer, like
// PyTorch's compare_ddp summary); a throughput table (examples/s per rank
// mean ± 1.96σ, total, scaling efficiency, like the RaySGD/Horovod tables);
// and the measured error of gradient compression.
#include <ostream>
#include <string>
#include <vector>

#include "report/compare_record.h"

namespace dtbench::report {

class CompareConsoleReporter {
 public:
  CompareConsoleReporter(std::ostream& out, std::string baseline)
      : out_(out), baseline_(std::move(baseline)) {}

  void phase_tables(const std::vector<ComparePoint>& points);
  void throughput_table(const std::vector<ComparePoint>& points);
  // Peak and model-state bytes per rank of every point (points recorded
  // before memory figures: "-"); nothing when no point has them.
  void memory_table(const std::vector<ComparePoint>& points);
  void compression_table(const std::vector<ComparePoint>& points);
  // Per model, total examples/s (images/s) by world size with one column per
  // configuration (strategy+compression, and the bucket where several
  // were swept): the shape of the RaySGD/Horovod tables (Horovod,
  // Horovod+fp16, DDP across 1..N GPUs). Nothing with a single configuration.
  void configuration_table(const std::vector<ComparePoint>& points);
  // All three.
  void all(const std::vector<ComparePoint>& points);

 private:
  std::ostream& out_;
  std::string baseline_;
};

// "12.34 (-3.1%)", "12.34 (base)", or "12.34" without a baseline: a time in
// milliseconds with its change against the baseline time (negative = faster).
std::string time_with_delta(double seconds, const double* baseline_seconds, bool is_baseline);

}  // namespace dtbench::report
