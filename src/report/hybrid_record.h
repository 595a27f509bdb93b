#pragma once
// `dtbench hybrid` results: per trainer seconds per iteration and lookup
// latencies; the table printed like PyTorch's DDP+RPC benchmark (p50 p75 p90
// p95 sec/iteration and examples/s per trainer, then "All").
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtbench::report {

struct HybridTrainerRun {
  int trainer = 0;
  std::vector<double> iteration_seconds;
  std::vector<double> lookup_seconds;  // one per iteration: all lookups of the batch
};

nlohmann::ordered_json to_json(const HybridTrainerRun& r);
HybridTrainerRun hybrid_trainer_from_json(const nlohmann::json& j);  // throws UsageError

// Percentiles 50/75/90/95 of `seconds` and batch / p50 examples per second.
struct HybridRow {
  std::string name;
  double p50 = 0, p75 = 0, p90 = 0, p95 = 0;
  double examples_per_s = 0;
};
HybridRow hybrid_row(const std::string& name, const std::vector<double>& seconds, int batch_size);

void print_hybrid_table(std::ostream& os, const std::vector<HybridTrainerRun>& runs, int batch_size);

}  // namespace dtbench::report
