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
#include "project/projection.h"
#include "report/json_io.h"
#include "train/train_options.h"

namespace dtbench::cli {
namespace {

int run_project(const ProjectFlags& f) {
  // The flags passed project_plan in cmd_project.cc; the profile needs
  // LibTorch (the model's layers).
  auto [o, strategies] = project_plan(f);
  project::ComputeProfile p = project_profile(f);

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
