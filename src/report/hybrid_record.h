#pragma once
// `dtbench hybrid` results: per trainer seconds per iteration and lookup
// latencies; the table printed like PyTorch's DDP+RPC benchmark (p50 p75 p90
// p95 sec/iteration and examples/s per trainer, then "All").
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtbench::report {

struct HybridTrainerRun {
  int trainer = 0;
  std::vector<double> iteration_seconds;
  std::vector<double> lookup_seconds;  // one per iteration: all lookups of the batch
  // Memory of the trainer's process over the timed iterations (-1: not
  // recorded, reports before memory figures): the peak of tensor bytes from
  // the allocator (device/memory.h: the FC stack, its gradients, the batch),
  // the resident-set peak, and the model state it holds (the FC stack's
  // parameters and gradients: plain SGD keeps no state, so (8 + 0)·Ψ).
  std::int64_t peak_bytes = -1;
  std::int64_t peak_rss_bytes = -1;
  std::int64_t model_state_bytes = -1;
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
