#include "project/profile.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "report/ddp_record.h"
#include "report/json_io.h"
#include "stats/stats.h"

namespace dtbench::project {
namespace {

using Json = nlohmann::ordered_json;

const char* const kHowTo =
    "make one with `dtbench ddp --world-sizes 1 --trace FILE --json REPORT` (the \"no ddp\" row is kept by default)";

double p50(const std::vector<double>& v) { return v.empty() ? 0 : stats::percentile(v, 50); }
double phase_p50(const report::DdpRun& r, const char* name) { return p50(report::phase_times(r, name)); }

const Json& runs_of(const Json& doc, const std::string& path) {
  const std::string schema = doc.is_object() && doc.contains("schema") && doc.at("schema").is_string()
                                 ? doc.at("schema").get<std::string>()
                                 : "";
  if (schema != "dtbench.ddp")
    throw UsageError(fmt::format("{}: not a `dtbench ddp` report (schema '{}'); {}", path, schema, kHowTo));
  if (!doc.contains("runs") || !doc.at("runs").is_array())
    throw UsageError(fmt::format("{}: the report has no runs", path));
  return doc.at("runs");
}

// The trace summary of a run, or null.
const Json* trace_of(const Json& run) {
  if (!run.contains("extras") || !run.at("extras").is_object()) return nullptr;
  const auto& e = run.at("extras");
  if (!e.contains("trace") || !e.at("trace").is_object()) return nullptr;
  return &e.at("trace");
}

}  // namespace

ComputeProfile profile_from_ddp_report(const Json& doc, const std::string& path, const std::string& row) {
  const Json& runs = runs_of(doc, path);
  const Json* chosen = nullptr;
  const Json* baseline = nullptr;
  for (const auto& r : runs) {
    const std::string label = report::json_value_or<std::string>(r, "label", "", path);
    const std::string reducer = report::json_value_or<std::string>(r, "reducer", "", path);
    const int world = report::json_value_or<int>(r, "world_size", 0, path);
    if (reducer == "none" && world == 1 && baseline == nullptr) baseline = &r;
    if (chosen != nullptr) continue;
    if (!row.empty()) {
      if (label == row) chosen = &r;
    } else if (world == 1 && reducer != "none" && trace_of(r) != nullptr) {
      chosen = &r;
    }
  }
  if (chosen == nullptr) {
    if (!row.empty()) throw UsageError(fmt::format("{}: no row labelled '{}' (--row)", path, row));
    throw UsageError(fmt::format("{}: no 1-rank DDP row with a trace to take the bucket profile from; {}", path, kHowTo));
  }
  const auto run = report::ddp_run_from_json(*chosen, path);
  if (run.world_size != 1 || run.reducer == "none")
    throw UsageError(fmt::format("{}: row '{}' is not a 1-rank DDP row (world {}, reducer {}); the profile is one "
                                 "rank's iteration with its reducer", path, run.label, run.world_size, run.reducer));
  const Json* trace = trace_of(*chosen);
  if (trace == nullptr || !trace->contains("buckets") || !trace->at("buckets").is_array() ||
      trace->at("buckets").empty())
    throw UsageError(fmt::format("{}: row '{}' has no trace summary with buckets; {}", path, run.label, kHowTo));

  ComputeProfile p;
  double none_peak = -1, none_state = -1;
  p.source = path;
  p.model = doc.contains("config") ? report::json_value_or<std::string>(doc.at("config"), "model", "", path) : "";
  p.batch_per_rank = run.batch_per_rank;
  p.tokens_per_example = run.tokens_per_example;
  p.threads = run.threads;
  {
    // What its activations were measured in: dtbench's eager attention, in
    // 16 bits under --amp, after --activation-checkpointing's recomputation.
    const auto config = report::json_value_or<Json>(doc, "config", Json::object(), path);
    p.activation_element_bytes =
        report::json_value_or<std::string>(config, "amp", "none", path) == "none" ? 4.0 : 2.0;
    p.activations_recompute = report::json_value_or<std::string>(config, "activation_checkpointing", "none", path);
    const auto optimizer = report::json_value_or<std::string>(config, "optimizer", "", path);
    if (optimizer == "adamw") p.optimizer_states = 2;
    else if (optimizer == "sgd" && config.contains("momentum") && config.at("momentum").is_number())
      p.optimizer_states = config.at("momentum").get<double>() != 0 ? 1 : 0;
  }
  const double total_1r = p50(report::slowest_rank_times(run));
  double trace_backward = -1;
  if (trace->contains("backward_compute_ms_p50") && trace->at("backward_compute_ms_p50").is_number())
    trace_backward = trace->at("backward_compute_ms_p50").get<double>() / 1000;
  if (baseline != nullptr) {
    const auto none = report::ddp_run_from_json(*baseline, path);
    p.forward_s = phase_p50(none, "forward");
    p.backward_s = phase_p50(none, "backward");
    p.optimizer_s = phase_p50(none, "optimizer");
    p.baseline_s = p50(report::slowest_rank_times(none));
    p.fixed_s = std::max(0.0, total_1r - p.baseline_s);
    if (none.peak_bytes >= 0 && none.model_state_bytes >= 0) {
      none_peak = static_cast<double>(none.peak_bytes);
      none_state = static_cast<double>(none.model_state_bytes);
    }
  } else {
    p.forward_s = phase_p50(run, "forward");
    p.backward_s = trace_backward > 0 ? trace_backward : phase_p50(run, "backward");
    p.optimizer_s = phase_p50(run, "optimizer");
    p.fixed_s = std::max(0.0, total_1r - p.forward_s - p.backward_s - p.optimizer_s);
  }
  // Ready marks were taken against the 1-rank row's backward; scale them
  // onto the backward the projection uses.
  const double measured_backward = trace_backward > 0 ? trace_backward : phase_p50(run, "backward");
  const double scale = measured_backward > 0 ? p.backward_s / measured_backward : 1.0;
  for (const auto& b : trace->at("buckets")) {
    const auto bytes = report::json_value_or<double>(b, "bytes", 0.0, path);
    if (!b.contains("ready_after_backward_ms_p50") || !b.at("ready_after_backward_ms_p50").is_number())
      throw UsageError(fmt::format("{}: row '{}': the trace summary has no bucket ready times (written by an older "
                                   "dtbench, or the reducer marks none); {}", path, run.label, kHowTo));
    const double ready = b.at("ready_after_backward_ms_p50").get<double>() / 1000 * scale;
    p.grads.push_back({bytes, std::min(ready, p.backward_s)});
  }
  p.grads_are_buckets = true;
  if (none_peak >= 0) {
    // The "no ddp" row's peak comes at the start of backward, before any
    // gradient exists (zero_grad set them to none; backward makes them as it
    // frees activations): its activations are the peak less the parameters
    // and optimizer state — its model state less the float32 gradients.
    double grad_bytes = 0;
    for (const auto& g : p.grads) grad_bytes += g.bytes;
    p.activation_bytes = std::max(0.0, none_peak - (none_state - grad_bytes));
  }
  if (doc.contains("config") && doc.at("config").is_object()) {
    const auto& c = doc.at("config");
    p.buckets.cap_bytes = report::json_value_or<double>(c, "bucket_cap_mb", 25.0, path) * 1024 * 1024;
    p.buckets.first_cap_bytes = report::json_value_or<double>(c, "first_bucket_cap_mb", 1.0, path) * 1024 * 1024;
  }
  for (const auto& m : measured_points(doc, path)) p.measured.push_back(m);
  for (const auto& m : one_rank_rows(doc, path)) p.one_rank.push_back(m);
  return p;
}

double ComputeProfile::scale_activations(double measured) const {
  if (!rescaled || measured < 0) return measured;
  const double q = std::min(measured, rescaled->quadratic_bytes);
  return (measured - q) * rescaled->linear + q * rescaled->quadratic;
}

double ComputeProfile::rescale_calibrated(double measured) const {
  if (!rescaled || measured < 0) return measured;
  if (rescaled->activation_bytes < 0) return scale_activations(measured);
  return measured + scale_activations(rescaled->activation_bytes) - rescaled->activation_bytes;
}

void rescale_profile(ComputeProfile& p, std::int64_t batch, std::int64_t seq_len, double macs_ratio,
                     double attention_bytes) {
  if (batch < 1 || (p.tokens_per_example > 0 && seq_len < 1) || !(macs_ratio > 0))
    throw UsageError("--batch-size and --seq-len must be at least 1");
  if (p.rescaled) throw UsageError("a profile is rescaled once");
  ComputeProfile::Rescaled r;
  r.batch_per_rank = p.batch_per_rank;
  r.tokens_per_example = p.tokens_per_example;
  const double b = static_cast<double>(batch) / static_cast<double>(std::max<std::int64_t>(1, p.batch_per_rank));
  const double t = p.tokens_per_example > 0 ? static_cast<double>(seq_len) / static_cast<double>(p.tokens_per_example) : 1.0;
  r.compute = b * macs_ratio;
  r.linear = b * t;
  r.quadratic = b * t * t;
  r.quadratic_bytes = std::max(0.0, attention_bytes);
  p.forward_s *= r.compute;
  p.backward_s *= r.compute;
  for (auto& g : p.grads) g.ready_s *= r.compute;
  p.batch_per_rank = batch;
  if (p.tokens_per_example > 0) p.tokens_per_example = seq_len;
  r.activation_bytes = p.activation_bytes;
  p.rescaled = r;
  p.activation_bytes = p.scale_activations(p.activation_bytes);
  // Rows to compare with: those run at the new shape; 1-rank rows to take a
  // strategy's fixed cost and activations from: those at the report's.
  const auto at = [](const MeasuredRow& m, std::int64_t b, std::int64_t t) {
    return m.batch_per_rank == b && m.tokens_per_example == t;
  };
  const auto keep_at = [&](std::vector<MeasuredRow>& rows, std::int64_t b, std::int64_t t) {
    rows.erase(std::remove_if(rows.begin(), rows.end(), [&](const MeasuredRow& m) { return !at(m, b, t); }),
               rows.end());
  };
  keep_at(p.measured, p.batch_per_rank, p.tokens_per_example);
  keep_at(p.one_rank, r.batch_per_rank, r.tokens_per_example);
}

std::vector<GradItem> grads_from_layers(const std::vector<LayerWork>& layers, double param_elements,
                                        double backward_s) {
  double counted = 0, macs = 0;
  for (const auto& l : layers) {
    counted += l.param_elements;
    macs += l.macs;
  }
  std::vector<GradItem> out;
  double done = 0;
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    done += it->macs;
    if (it->param_elements > 0) out.push_back({it->param_elements * 4, macs > 0 ? backward_s * done / macs : backward_s});
  }
  if (param_elements > counted) out.push_back({(param_elements - counted) * 4, backward_s});
  return out;
}

namespace {

std::vector<MeasuredRow> rows_where(const Json& doc, const std::string& path, bool one_rank) {
  std::vector<MeasuredRow> out;
  const auto config = report::json_value_or<Json>(doc, "config", Json::object(), path);
  const auto recompute = report::json_value_or<std::string>(config, "activation_checkpointing", "none", path);
  const auto amp = report::json_value_or<std::string>(config, "amp", "none", path);
  for (const auto& r : runs_of(doc, path)) {
    const auto run = report::ddp_run_from_json(r, path);
    // A tensor-parallel or pipeline row (reducer none where it is one
    // replica) is set beside a layout's projection only, never a 1-rank
    // calibration.
    if ((run.world_size == 1) != one_rank || (run.reducer == "none" && run.tp == 1 && run.pp == 1) ||
        (one_rank && (run.tp > 1 || run.pp > 1)))
      continue;
    MeasuredRow m{run.reducer, run.world_size, p50(report::slowest_rank_times(run)),
                  static_cast<double>(run.peak_bytes), run.batch_per_rank, run.tokens_per_example, run.tp, recompute, amp};
    m.pp = run.pp;
    if (run.pp > 1) {
      // The schedule it ran (ddp_bench's extras.layout.pipeline).
      const auto extras = report::json_value_or<Json>(r, "extras", Json::object(), path);
      const auto layout = report::json_value_or<Json>(extras, "layout", Json::object(), path);
      const auto pipe = report::json_value_or<Json>(layout, "pipeline", Json::object(), path);
      m.pp_schedule = report::json_value_or<std::string>(pipe, "schedule", "", path);
      m.microbatches = report::json_value_or<int>(pipe, "microbatches", 0, path);
      m.stages_per_rank = report::json_value_or<int>(pipe, "stages_per_rank", 1, path);
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace

std::vector<MeasuredRow> measured_points(const Json& doc, const std::string& path) {
  return rows_where(doc, path, false);
}

std::vector<MeasuredRow> one_rank_rows(const Json& doc, const std::string& path) {
  return rows_where(doc, path, true);
}

}  // namespace dtbench::project
