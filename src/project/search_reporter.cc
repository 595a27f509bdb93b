// `dtbench project --search`'s table and JSON (project_reporter.h).
#include <fmt/format.h>

#include "core/units.h"
#include "project/project_reporter.h"
#include "report/json_io.h"

namespace dtbench::project {
namespace {

using Json = nlohmann::ordered_json;
constexpr double kGiB = 1024.0 * 1024 * 1024;

}  // namespace

void write_search_table(std::ostream& out, const ComputeProfile& p, const SearchOptions& s, const SearchOutcome& o) {
  out << fmt::format("Layout search: {}, {} ranks, {} per rank, {}, from {}\n", p.model.empty() ? "?" : p.model,
                     s.world, format_bytes(static_cast<std::uint64_t>(s.memory_limit)),
                     s.global_batch > 0 ? fmt::format("global batch {}", s.global_batch)
                                        : fmt::format("batch {} per data-parallel rank", p.batch_per_rank),
                     p.source);
  out << fmt::format("  {} layouts projected, {} fit; SP with every tp > 1, loss parallel where the vocabulary "
                     "divides, interleaved 1F1B with 2 stages per rank, fsdp unresharded and no zero2 under a pipeline "
                     "(docs/metrics.md \"Projection: layouts\")\n\n",
                     o.candidates, o.fitting);
  out << fmt::format("{:>3} {:<76} {:>6} {:>14} {:>11} {:>12} {}\n", "#", "layout", "batch", "tokens/s/rank",
                     "iter (ms)", "mem/rank GiB", "limited by");
  int i = 0;
  for (const auto& r : o.best)
    out << fmt::format("{:>3} {:<76} {:>6} {:>14.1f} {:>11.1f} {:>12.2f} {}\n", ++i, layout_name(r), r.local_batch,
                       r.row.tokens_per_s_per_rank, r.row.iteration_s * 1e3, r.row.memory.total() / kGiB,
                       r.limited_by);
  out << "\nbatch = the local batch of a data-parallel rank; tokens/s/rank = batch x tokens / iteration / (tp x pp); "
         "limited by = within 5 % of the memory limit, else the largest of the bubble, TP, PP and DP communication "
         "and recomputation\n";
}

Json search_json(const ComputeProfile& p, const SearchOptions& s, const SearchOutcome& o) {
  Json rows = Json::array();
  for (const auto& r : o.best) {
    const auto& l = r.options.layout;
    rows.push_back({{"strategy", strategy_name(r.options.strategy)},
                    {"world_size", r.row.world_size},
                    {"nodes", r.row.nodes},
                    {"layout",
                     {{"dp", r.row.dp},
                      {"tp", l.tp},
                      {"pp", l.pp},
                      {"pp_schedule", l.pp > 1 ? Json(pp_schedule_name(l.schedule)) : Json(nullptr)},
                      {"microbatches", l.microbatches},
                      {"stages_per_rank", l.stages_per_rank},
                      {"sequence_parallel", l.sequence_parallel},
                      {"loss_parallel", l.loss_parallel},
                      {"activation_checkpointing", recompute_name(l.recompute)}}},
                    {"name", layout_name(r)},
                    {"local_batch", r.local_batch},
                    {"iteration_s", r.row.iteration_s},
                    {"tokens_per_sec_per_rank", r.row.tokens_per_s_per_rank},
                    {"examples_per_sec", r.row.examples_per_s},
                    {"scaling_efficiency", r.row.efficiency},  // against the same layout at dp 1
                    {"efficiency_baseline", "the same layout at dp 1"},
                    {"exposed_comm_s", r.row.exposed_s},
                    {"bubble_s", r.row.bubble_s},
                    {"tp_comm_s", r.row.tp_comm_s},
                    {"pp_comm_s", r.row.pp_comm_s},
                    {"recompute_s", r.row.recompute_s},
                    {"limited_by", r.limited_by},
                    {"memory", {{"total_bytes", r.row.memory.total()},
                                {"model_state_bytes", r.row.memory.model_states()},
                                {"activation_bytes", r.row.memory.activations}}}});
  }
  return Json{{"schema", "dtbench.project"},
              {"schema_version", 1},
              {"created", report::utc_timestamp()},
              {"profile", {{"source", p.source}, {"model", p.model}, {"tokens_per_example", p.tokens_per_example}}},
              {"memory", {{"limit_bytes", s.memory_limit}}},
              {"search",
               {{"world_size", s.world},
                {"global_batch", s.global_batch > 0 ? Json(s.global_batch) : Json(nullptr)},
                {"candidates", o.candidates},
                {"fitting", o.fitting}}},
              {"rows", rows}};
}

}  // namespace dtbench::project
