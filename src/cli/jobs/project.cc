// `dtbench project`: iteration time and scaling efficiency at rank counts
// that were not measured, from a 1-rank compute profile (a ddp report with
// --trace, or a model and per-phase times) and a network (measured `dtbench
// comm` reports, or bandwidth and latency per level). docs/metrics.md
// "Projection" derives the model.
#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/jobs.h"
#include "cli/project_flags.h"
#include "cli/jobs/project_profile.h"
#include "core/error.h"
#include "core/units.h"
#include "project/comm_fit.h"
#include "project/profile.h"
#include "project/project_reporter.h"
#include "project/layout_search.h"
#include "project/projection.h"
#include "report/json_io.h"
#include "train/train_options.h"

namespace dtbench::cli {
namespace {

// --search: every layout of the one world size, those that fit ranked; none
// fitting is an error naming the smallest layout and what it needs.
int run_search(const ProjectFlags& f, const project::ProjectOptions& o,
               const std::vector<project::Strategy>& strategies, const project::ComputeProfile& p) {
  project::SearchOptions s;
  s.world = o.world_sizes.front();
  s.memory_limit = o.memory_limit;
  s.global_batch = f.global_batch;
  s.strategies = strategies;
  s.top = f.top;
  const auto outcome = project::search_layouts(p, o, s);
  if (outcome.best.empty()) {
    if (outcome.smallest.empty())
      throw UsageError(fmt::format("--search: no layout of {} ranks divides the model and the batch", s.world));
    const auto& r = outcome.smallest.front();
    throw UsageError(fmt::format(
        "--search: none of {} layouts of {} ranks fits in {} per rank; the smallest, {}, needs {}",
        outcome.candidates, s.world, format_bytes(static_cast<std::uint64_t>(s.memory_limit)),
        project::layout_name(r), format_bytes(static_cast<std::uint64_t>(r.row.memory.total()))));
  }
  std::ostringstream text;
  project::write_search_table(text, p, s, outcome);
  std::cout << text.str();
  if (!f.json.empty()) {
    report::write_json_atomic(f.json, project::search_json(p, s, outcome));
    std::cout << "Report: " << f.json << "\n";
  }
  return 0;
}

int run_project(const ProjectFlags& f) {
  // The flags passed project_plan in cmd_project.cc; the profile needs
  // LibTorch (the model's layers).
  auto [o, strategies, search] = project_plan(f);
  project::ComputeProfile p = project_profile(f);
  // A report's optimizer unless --optimizer names another (a what-if).
  if (!f.optimizer_given && p.optimizer_states >= 0) o.memory.optimizer_states = p.optimizer_states;
  if (!p.decoder && (f.amp != "none" || f.attention != "eager"))
    throw UsageError(fmt::format("--amp and --attention set a decoder's activations (gpt2, llama families); {} has "
                                 "none to set", p.model.empty() ? p.source : p.model));
  if (search) return run_search(f, o, strategies, p);

  std::vector<project::StrategyProjection> all;
  for (auto s : strategies) {
    o.strategy = s;
    all.push_back({o, project::project(p, o)});
  }
  std::ostringstream text;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i > 0) text << "\n";
    project::write_projection_table(text, p, all[i].options, all[i].rows);
  }
  std::cout << text.str();
  if (!f.json.empty()) {
    report::write_json_atomic(f.json, project::projection_json(p, all));
    std::cout << "Report: " << f.json << "\n";
  }
  return 0;
}

}  // namespace

int project_job(const ProjectFlags& f) { return run_project(f); }

}  // namespace dtbench::cli
