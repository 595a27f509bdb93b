#pragma once
// Console output of `dtbench ddp`, in the layout of PyTorch's
// benchmarks/distributed/ddp/benchmark.py, plus a per-phase table.
#include <ostream>
#include <string>
#include <vector>

#include "report/ddp_record.h"

namespace dtbench::report {

class DdpConsoleReporter {
 public:
  // `percentiles`: the columns of the main table (e.g. {50, 75, 90}).
  DdpConsoleReporter(std::ostream& out, std::vector<double> percentiles)
      : out_(out), percentiles_(std::move(percentiles)) {}

  // "Benchmark: resnet50 with batch size 32" and the column header.
  void header(const std::string& model, long long batch_per_rank, const std::string& details);
  // One row: "2 ranks --    1N/2R:  p50: 0.100s  319/s ...  spread 1.2%".
  void row(const DdpRun& run);
  // The p50 of each phase per row (slowest rank per iteration).
  void phases(const std::vector<DdpRun>& runs);

 private:
  std::ostream& out_;
  std::vector<double> percentiles_;
};

// "p50" for 50, "p99.9" for 99.9.
std::string percentile_name(double p);

}  // namespace dtbench::report
