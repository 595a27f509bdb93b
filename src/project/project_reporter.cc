#include "project/project_reporter.h"

#include <cmath>

#include <fmt/format.h>

#include "core/units.h"
#include "report/json_io.h"

namespace dtbench::project {
namespace {

using Json = nlohmann::ordered_json;

std::string rate(double bytes_per_s) { return fmt::format("{:.3g} GB/s", bytes_per_s / 1e9); }
std::string us(double s) { return fmt::format("{:.3g} us", s * 1e6); }

std::string describe(const Level& l, const char* what) {
  if (!l.curve.empty()) return fmt::format("{}: measured, {} per step, {}", what, us(l.latency_s), l.source);
  if (l.bus_bw <= 0) return fmt::format("{}: not given", what);
  return fmt::format("{}: {} bus bandwidth, {} per step", what, rate(l.bus_bw), us(l.latency_s));
}

Json level_json(const Level& l) {
  Json j{{"latency_s", l.latency_s}};
  if (l.curve.empty()) {
    j["bus_bw_bytes_per_s"] = l.bus_bw;
  } else {
    Json c = Json::array();
    for (const auto& [b, spb] : l.curve) c.push_back({{"bytes", b}, {"seconds_per_bus_byte", spb}});
    j["measured"] = c;
    j["source"] = l.source;
  }
  if (!l.cpu_util.empty()) {
    Json u = Json::array();
    for (const auto& [b, cores] : l.cpu_util) u.push_back({{"bytes", b}, {"cores", cores}});
    j["cpu_util"] = u;
  }
  return j;
}

}  // namespace

void write_projection_table(std::ostream& out, const ComputeProfile& p, const ProjectOptions& o,
                            const std::vector<ProjectionRow>& rows) {
  const auto buckets = projection_buckets(p, o);
  double largest = 0, total = 0;
  for (const auto& b : buckets) {
    largest = std::max(largest, b.bytes);
    total += b.bytes;
  }
  out << fmt::format("Projection: {}, {}, batch {} per rank{}, from {}{}\n", p.model.empty() ? "?" : p.model,
                     strategy_name(o.strategy), p.batch_per_rank,
                     p.tokens_per_example > 0 ? fmt::format(" x {} tokens", p.tokens_per_example) : std::string(),
                     p.source,
                     p.threads > 0 ? fmt::format(" ({} threads per rank)", p.threads) : "");
  if (p.rescaled)
    out << fmt::format("  rescaled from the report's {}: forward and backward x {:.3f} (the shapes' FLOPs), "
                       "activations x {:.3f} (x {:.3f} for the attention's {} of them)\n",
                       p.tokens_per_example > 0
                           ? fmt::format("{} x {} tokens", p.rescaled->batch_per_rank, p.rescaled->tokens_per_example)
                           : fmt::format("batch {}", p.rescaled->batch_per_rank),
                       p.rescaled->compute, p.rescaled->linear, p.rescaled->quadratic,
                       format_bytes(static_cast<std::uint64_t>(p.rescaled->quadratic_bytes)));
  const double fixed = rows.empty() ? p.fixed_s : rows.front().fixed_s;
  const std::string fixed_from = rows.empty() ? std::string("profile") : rows.front().fixed_from;
  out << fmt::format("  compute per iteration: forward {:.2f} ms, backward {:.2f} ms, optimizer {:.2f} ms{}, "
                     "{} fixed cost {:.2f} ms ({})\n",
                     p.forward_s * 1e3, p.backward_s * 1e3, p.optimizer_s * 1e3,
                     is_sharded(o.strategy) ? " (sharded: / N)" : "", strategy_name(o.strategy), fixed * 1e3,
                     fixed_from == "profile"
                         ? (p.source == "command line" ? std::string("--ddp-overhead-ms") : std::string("1-rank DDP - no ddp"))
                     : fixed_from == "none"
                         ? fmt::format("not measured: a report with a 1-rank {} row, by --measured", strategy_name(o.strategy))
                         : fixed_from);
  if (o.strategy == Strategy::kFsdp)
    out << fmt::format("  units: {} (root + {} blocks), parameters gathered in {}, reduced in float32, {}\n",
                       p.units.size(), p.units.empty() ? 0 : p.units.size() - 1,
                       o.memory.param_bytes == 2 ? "bf16" : "float32",
                       o.memory.reshard_after_forward ? "resharded after forward" : "kept from forward to backward");
  else
    out << fmt::format("  gradients: {} in {} bucket(s), largest {}{}{}{}\n", format_bytes(static_cast<std::uint64_t>(total)),
                     buckets.size(), format_bytes(static_cast<std::uint64_t>(largest)),
                     o.rebucket ? fmt::format(" (re-bucketed: first {}, then {})",
                                              format_bytes(static_cast<std::uint64_t>(o.rebucket->first_cap_bytes)),
                                              format_bytes(static_cast<std::uint64_t>(o.rebucket->cap_bytes)))
                                : "",
                     o.wire_ratio != 1 ? fmt::format(", {:.2g} of the bytes on the wire", o.wire_ratio) : "",
                     o.overlap ? "" : ", no overlap (allreduces after backward)");
  out << fmt::format("  network: {} rank(s) per node, algorithm {}, base latency {}\n", o.net.ranks_per_node,
                     algo_name(o.algo), us(o.net.base_latency_s));
  out << "    " << describe(o.net.intra, "inside a node") << "\n";
  out << "    " << describe(o.net.inter, "between nodes (per node)") << "\n";
  for (const auto& [levels, name] : {std::pair{&o.net.all_gather, "all_gather"}, std::pair{&o.net.reduce_scatter, "reduce_scatter"}}) {
    if (levels->intra) out << "    " << describe(*levels->intra, fmt::format("{} inside a node", name).c_str()) << "\n";
    if (levels->inter) out << "    " << describe(*levels->inter, fmt::format("{} between nodes", name).c_str()) << "\n";
  }
  const bool known = !rows.empty() && rows.front().activations_known;
  std::string activations = "not known (left out)";
  if (known) {
    const auto& r = rows.front();
    const std::string from = r.activations_from.rfind("Korthikanti", 0) == 0
                                 ? r.activations_from + (o.layout.pp > 1 ? ", the largest stage's" : "")
                             : r.activations_from != "profile" ? r.activations_from + "'s peak less the formula"
                             : p.source == "command line"   ? std::string("stated")
                                                            : std::string("the \"no ddp\" row's peak less its parameters and optimizer state");
    activations = fmt::format("{} ({})", format_bytes(static_cast<std::uint64_t>(r.memory.activations)), from);
  }
  // Which precision the states assume: only fsdp's units take --param-dtype;
  // every other strategy's parameters and gradients are float32 (ZeRO's
  // mixed-precision forms are not modelled).
  out << fmt::format("  memory per rank: float32 parameters and gradients{}, {} optimizer ({} float32 state(s) per "
                     "parameter), activations {}{}\n",
                     o.memory.param_bytes == 2 ? " (fsdp's gathered units in bf16)" : "",
                     o.memory.optimizer_states == 2 ? "adamw" : "sgd", o.memory.optimizer_states, activations,
                     o.memory_limit > 0
                         ? fmt::format(", limit {}", format_bytes(static_cast<std::uint64_t>(o.memory_limit)))
                         : "");
  const auto& l = o.layout;
  const bool layout = !l.is_default();
  if (layout)
    out << fmt::format("  layout: {}; the strategy on each data-parallel group of ranks / {}; activations in {}-bit, "
                       "{} attention\n",
                       l.describe(), l.tp * l.pp, l.activation_bytes == 2 ? 16 : 32,
                       l.flash_attention ? "flash" : "eager");
  if (o.cores_per_node > 0)
    out << fmt::format("  CPU contention: {:g} cores per node shared by {} thread(s) per rank and the cores the "
                       "allreduces keep busy (cpu_util)\n",
                       o.cores_per_node, p.threads);
  out << "\n";
  bool any_measured = false;
  for (const auto& r : rows) any_measured = any_measured || r.measured_s.has_value();
  out << fmt::format("{:>7} {:>6} {:>11} {:>11} {:>10} {:>12} {:>10} {:>5}", "ranks", "nodes", "iter (ms)",
                     "exposed ms", "comm ms", "examples/s", "efficiency", "algo");
  const bool contended = o.cores_per_node > 0;
  if (contended) out << fmt::format(" {:>13}", "contention ms");
  if (layout) out << fmt::format(" {:>5} {:>10} {:>10} {:>10} {:>12}", "dp", "bubble ms", "TP ms", "PP ms", "recompute ms");
  if (l.cp > 1) out << fmt::format(" {:>10}", "CP ms");
  if (any_measured) out << fmt::format(" {:>12} {:>7}", "measured ms", "error");
  bool any_peak = false;
  for (const auto& r : rows) any_peak = any_peak || r.measured_peak_bytes.has_value();
  out << fmt::format(" {:>12} {:>12}", "states GiB", "mem/rank GiB");
  if (any_peak) out << fmt::format(" {:>13} {:>7}", "measured GiB", "error");
  if (o.memory_limit > 0) out << fmt::format(" {:>5} {:>9}", "fits", "max batch");
  const bool tokens = p.tokens_per_example > 0;
  if (tokens) out << fmt::format(" {:>14}", "tokens/s/rank");
  out << "\n";
  for (const auto& r : rows) {
    out << fmt::format("{:>7} {:>6} {:>11.2f} {:>11.2f} {:>10.2f} {:>12.1f} {:>9.1f}% {:>5}", r.world_size, r.nodes,
                       r.iteration_s * 1e3, r.exposed_s * 1e3, r.comm_s * 1e3, r.examples_per_s, r.efficiency * 100,
                       r.world_size > 1 ? r.algo : "-");
    constexpr double kGiB = 1024.0 * 1024 * 1024;
    if (contended) out << fmt::format(" {:>13.2f}", r.contention_s * 1e3);
    if (layout)
      out << fmt::format(" {:>5} {:>10.2f} {:>10.2f} {:>10.2f} {:>12.2f}", r.dp, r.bubble_s * 1e3, r.tp_comm_s * 1e3,
                         r.pp_comm_s * 1e3, r.recompute_s * 1e3);
    if (l.cp > 1) out << fmt::format(" {:>10.2f}", r.cp_comm_s * 1e3);
    if (r.measured_s)
      out << fmt::format(" {:>12.2f} {:>+6.1f}%", *r.measured_s * 1e3, (r.iteration_s / *r.measured_s - 1) * 100);
    else if (any_measured)
      out << fmt::format(" {:>12} {:>7}", "-", "-");
    out << fmt::format(" {:>12.3f} {:>12.3f}", r.memory.model_states() / kGiB, r.memory.total() / kGiB);
    if (r.measured_peak_bytes)
      out << fmt::format(" {:>13.3f} {:>+6.1f}%", *r.measured_peak_bytes / kGiB,
                         (r.memory.total() / *r.measured_peak_bytes - 1) * 100);
    else if (any_peak)
      out << fmt::format(" {:>13} {:>7}", "-", "-");
    if (r.fits)
      out << fmt::format(" {:>5} {:>9}", *r.fits ? "yes" : "no",
                         r.largest_batch >= 0 ? std::to_string(r.largest_batch) : std::string("-"));
    if (tokens) out << fmt::format(" {:>14.0f}", r.tokens_per_s_per_rank);
    out << "\n";
  }
  if (layout)
    out << "\nlayout (docs/metrics.md \"Projection: layouts\"): tokens/s/rank = local batch x tokens / iteration / "
           "(tp x pp x cp), as torchtitan counts per GPU; mem/rank = the largest pipeline stage's (each stage's in the "
           "JSON)";
  out << (layout ? "\nefficiency = iteration of the layout at dp 1 (tp x pp x cp ranks) / iteration(N)"
                 : "\nefficiency = iteration(1 rank) / iteration(N)");
  out << "; error = projected / measured - 1; mem/rank = the peak: model "
         "states + gathered units + buffers + activations, without the gradients not yet made in backward (or the "
         "model states and the buffers kept after it, ddp's buckets and horovod's fusion buffer, when more) "
         "(docs/metrics.md \"Projection: sharded strategies\")\n";
}

Json projection_json(const ComputeProfile& p, const std::vector<StrategyProjection>& all) {
  const ProjectOptions& o = all.front().options;
  Json buckets = Json::array();
  for (const auto& b : projection_buckets(p, o)) buckets.push_back({{"bytes", b.bytes}, {"ready_s", b.ready_s}});
  Json units = Json::array();
  for (const auto& u : p.units) units.push_back({{"param_elements", u.param_elements}, {"compute_share", u.compute_share}});
  Json profile{{"source", p.source},           {"model", p.model},
               {"batch_per_rank", p.batch_per_rank}, {"tokens_per_example", p.tokens_per_example},
               {"threads", p.threads},
               {"forward_s", p.forward_s},     {"backward_s", p.backward_s},
               {"optimizer_s", p.optimizer_s}, {"fixed_s", p.fixed_s},
               {"buckets", buckets},
               {"units", units},
               {"parameters", p.parameters},
               {"activation_bytes", p.activation_bytes >= 0 ? Json(p.activation_bytes) : Json(nullptr)}};
  profile["rescaled_from"] =
      p.rescaled ? Json{{"batch_per_rank", p.rescaled->batch_per_rank},
                        {"tokens_per_example", p.rescaled->tokens_per_example},
                        {"compute_factor", p.rescaled->compute},
                        {"activation_factor", p.rescaled->linear},
                        {"attention_factor", p.rescaled->quadratic},
                        {"attention_bytes", p.rescaled->quadratic_bytes}}
                 : Json(nullptr);
  Json network{{"ranks_per_node", o.net.ranks_per_node},
               {"cores_per_node", o.cores_per_node},
               {"base_latency_s", o.net.base_latency_s},
               {"intra", level_json(o.net.intra)},
               {"inter", level_json(o.net.inter)},
               {"algo", algo_name(o.algo)}};
  // The sharded strategies' own measured levels (null: the allreduce level's figures).
  for (const auto& [levels, name] : {std::pair{&o.net.all_gather, "all_gather"}, std::pair{&o.net.reduce_scatter, "reduce_scatter"}})
    network[name] = {{"intra", levels->intra ? level_json(*levels->intra) : Json(nullptr)},
                     {"inter", levels->inter ? level_json(*levels->inter) : Json(nullptr)}};
  Json whatif{{"bucket_cap_bytes", o.rebucket ? Json(o.rebucket->cap_bytes) : Json(nullptr)},
              {"first_bucket_cap_bytes", o.rebucket ? Json(o.rebucket->first_cap_bytes) : Json(nullptr)},
              {"wire_ratio", o.wire_ratio},
              {"overlap", o.overlap}};
  Json memory{{"optimizer_states", o.memory.optimizer_states},
              {"param_bytes", o.memory.param_bytes},
              {"reshard_after_forward", o.memory.reshard_after_forward},
              {"bucket_cap_bytes", o.memory.bucket_cap_bytes > 0 ? Json(o.memory.bucket_cap_bytes) : Json(nullptr)},
              {"limit_bytes", o.memory_limit > 0 ? Json(o.memory_limit) : Json(nullptr)}};
  Json out_rows = Json::array();
  for (const auto& sp : all)
  for (const auto& r : sp.rows) {
    Json j{{"strategy", r.strategy},         {"world_size", r.world_size},     {"nodes", r.nodes},
           {"buckets", r.buckets},           {"iteration_s", r.iteration_s},
           {"exposed_comm_s", r.exposed_s},  {"comm_s", r.comm_s},
           {"contention_s", r.contention_s},
           {"examples_per_sec", r.examples_per_s}, {"scaling_efficiency", r.efficiency},
           {"tokens_per_sec_per_rank", p.tokens_per_example > 0 ? Json(r.tokens_per_s_per_rank) : Json(nullptr)},
           {"algo", r.world_size > 1 ? r.algo : "none"},
           {"fixed_s", r.fixed_s},
           {"fixed_from", r.fixed_from},
           {"activations_from", r.activations_from},
           {"collectives", r.collectives}};
    j["measured_s"] = r.measured_s ? Json(*r.measured_s) : Json(nullptr);
    j["error"] = r.measured_s ? Json(r.iteration_s / *r.measured_s - 1) : Json(nullptr);
    j["measured_peak_bytes"] = r.measured_peak_bytes ? Json(*r.measured_peak_bytes) : Json(nullptr);
    j["memory"] = {{"parameters_bytes", r.memory.parameters},
                   {"gradients_bytes", r.memory.gradients},
                   {"optimizer_bytes", r.memory.optimizer},
                   {"model_state_bytes", r.memory.model_states()},
                   {"gathered_bytes", r.memory.gathered},
                   {"buffers_bytes", r.memory.buffers},
                   {"made_in_backward_bytes", r.memory.made_in_backward},
                   {"kept_buffers_bytes", r.memory.kept_buffers},
                   {"step_temporaries_bytes", r.memory.step_temporaries},
                   {"after_backward_bytes", r.memory.after_backward()},
                   {"activation_bytes", r.activations_known ? Json(r.memory.activations) : Json(nullptr)},
                   {"total_bytes", r.memory.total()},
                   {"fits", r.fits ? Json(*r.fits) : Json(nullptr)},
                   {"largest_batch", r.largest_batch >= 0 ? Json(r.largest_batch) : Json(nullptr)}};
    j["layout"] = {{"dp", r.dp}, {"tp", r.tp}, {"pp", r.pp}, {"cp", r.cp}};
    j["bubble_s"] = r.bubble_s;
    j["tp_comm_s"] = r.tp_comm_s;
    j["pp_comm_s"] = r.pp_comm_s;
    j["recompute_s"] = r.recompute_s;
    j["cp_comm_s"] = r.cp_comm_s;
    Json stages = Json::array();
    for (const auto& st : r.stages)
      stages.push_back({{"blocks", st.blocks},
                        {"parameters", st.parameters},
                        {"microbatches_in_flight", st.in_flight},
                        {"model_state_bytes", st.memory.model_states()},
                        {"activation_bytes", r.activations_known ? Json(st.memory.activations) : Json(nullptr)},
                        {"total_bytes", st.memory.total()}});
    j["stages"] = stages;
    out_rows.push_back(j);
  }
  const auto& l = o.layout;
  Json layout{{"tp", l.tp},
              {"pp", l.pp},
              {"cp", l.cp},
              {"pp_schedule", l.pp > 1 ? Json(pp_schedule_name(l.schedule)) : Json(nullptr)},
              {"microbatches", l.microbatches},
              {"stages_per_rank", l.stages_per_rank},
              {"sequence_parallel", l.sequence_parallel},
              {"loss_parallel", l.loss_parallel},
              {"activation_checkpointing", recompute_name(l.recompute)},
              {"activation_element_bytes", l.activation_bytes},
              {"attention", l.flash_attention ? "flash" : "eager"}};
  return Json{{"schema", "dtbench.project"}, {"schema_version", 1},    {"created", report::utc_timestamp()},
              {"profile", profile},          {"network", network},     {"what_if", whatif},
              {"memory", memory},            {"layout", layout},
              {"rows", out_rows}};
}

}  // namespace dtbench::project
