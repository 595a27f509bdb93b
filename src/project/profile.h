#pragma once
// The compute profile of `dtbench project` read from a `dtbench ddp` report:
// forward, backward and optimizer p50 of the "no ddp" row, DDP's fixed cost
// (1-rank DDP p50 - no ddp p50) and each bucket's bytes and ready time from
// the 1-rank row's --trace summary; the activations (and other transient
// tensors) one rank holds: the "no ddp" row's peak tensor bytes less its
// parameters and optimizer state (its gradients do not exist yet at that
// peak). Torch-free.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "project/projection.h"

namespace dtbench::project {

// `doc` read from `path`. `row`: the label of the 1-rank row to profile
// ("" = the first 1-rank row of a reducer other than none that has a trace).
// Throws UsageError with one line saying what the report lacks and the
// command that makes a usable one.
ComputeProfile profile_from_ddp_report(const nlohmann::ordered_json& doc, const std::string& path,
                                       const std::string& row);

// One layer of a forward pass for the model profile: its multiply-adds and
// the parameter elements it reads (train/flops' LayerCost, torch-free here).
struct LayerWork {
  double macs = 0;
  double param_elements = 0;
};

// Gradient items of a model from its layers in forward order: backward runs
// them in reverse, so a layer's gradients (4 bytes per element) are ready
// when backward has done its and every later layer's multiply-adds, at
// backward_s x (those multiply-adds / all of them); parameters no layer
// reads (`param_elements` beyond the layers': embeddings, norms) are ready
// when backward ends.
std::vector<GradItem> grads_from_layers(const std::vector<LayerWork>& layers, double param_elements,
                                        double backward_s);

// `p` (a report's profile) moved to `batch` examples per rank of `seq_len`
// tokens each (the report's where unchanged): forward, backward and the
// gradients' ready marks scale with the training FLOPs, by (batch / B) x
// `macs_ratio` (forward multiply-adds per example at seq_len over those at
// the report's length, from the model's shapes); the optimizer step, the
// fixed costs and the gradients do not change; activations as
// ComputeProfile::scale_activations, `attention_bytes` being the part of
// the measured ones that grows as T² (the attention probabilities each
// layer keeps for backward). Its rows of more than one rank were measured
// at the report's shape: dropped. Throws UsageError for a shape below 1.
void rescale_profile(ComputeProfile& p, std::int64_t batch, std::int64_t seq_len, double macs_ratio,
                     double attention_bytes);

// Every row of more than one rank in a ddp report (reducer, world size,
// iteration p50, peak tensor bytes per rank), for comparing with the projection.
std::vector<MeasuredRow> measured_points(const nlohmann::ordered_json& doc, const std::string& path);
// The same for its 1-rank rows of a reducer other than none.
std::vector<MeasuredRow> one_rank_rows(const nlohmann::ordered_json& doc, const std::string& path);

}  // namespace dtbench::project
