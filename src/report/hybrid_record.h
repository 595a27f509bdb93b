#pragma once
// `dtbench hybrid` results: per trainer seconds per epoch and lookup
// latencies; the table printed like PyTorch's DDP+RPC benchmark (p50 p75 p90
// p95 sec/epoch and bags/s per trainer, then "All").
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtbench::report {

struct HybridTrainerRun {
  int trainer = 0;
  std::vector<double> epoch_seconds;   // one per timed epoch (batch generation included)
  std::vector<double> lookup_seconds;  // one per timed batch: its lookups on every server
  std::int64_t last_epoch_bags = 0;    // bags in the last epoch (the original's nelem)
  // Memory of the trainer's process over the timed epochs (-1: not
  // recorded): the peak of tensor bytes from the allocator (device/memory.h:
  // the FC stack, its gradients, the batch), the resident-set peak, and the
  // model state it holds (the FC stack's parameters and gradients: plain SGD
  // keeps no state, so (8 + 0)·Ψ).
  std::int64_t peak_bytes = -1;
  std::int64_t peak_rss_bytes = -1;
  std::int64_t model_state_bytes = -1;
};

nlohmann::ordered_json to_json(const HybridTrainerRun& r);
HybridTrainerRun hybrid_trainer_from_json(const nlohmann::json& j);  // throws UsageError

// Percentiles 50/75/90/95 of `seconds` (numpy's linear interpolation, as
// the original) and `bags` / each of them: the original's "N/s" figures.
struct HybridRow {
  std::string name;
  double p50 = 0, p75 = 0, p90 = 0, p95 = 0;
  double bags_per_s[4] = {0, 0, 0, 0};  // at p50, p75, p90, p95
};
HybridRow hybrid_row(const std::string& name, const std::vector<double>& seconds, std::int64_t bags);
// "All": every trainer's epochs pooled, bags summed over trainers.
HybridRow hybrid_all_row(const std::vector<HybridTrainerRun>& runs);

void print_hybrid_table(std::ostream& os, const std::vector<HybridTrainerRun>& runs);

}  // namespace dtbench::report
