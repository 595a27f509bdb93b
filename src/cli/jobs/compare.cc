// `dtbench compare`: which way of synchronising gradients is fastest here,
// and how does each scale? Sweeps models × world sizes × reducers × bucket
// sizes × compressions × amp settings, each point a full `ddp` job (cli/ddp_job), appends
// every finished point to a JSON-lines log (--resume continues one), then
// prints the per-phase tables, the throughput/efficiency table and the
// compression errors.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/compare/grid.h"
#include "bench/env_info.h"
#include "cli/commands.h"
#include "cli/jobs.h"
#include "cli/jobs/ddp_job.h"
#include "cli/run_options.h"
#include "cli/sweep_log.h"
#include "core/error.h"
#include "device/device.h"
#include "core/log.h"
#include "core/units.h"
#include "launch/world.h"
#include "report/compare_record.h"
#include "report/compare_reporter.h"
#include "report/ddp_record.h"
#include "report/env_reporter.h"
#include "report/json_io.h"
#include "report/progress.h"
#include "report/trace_reporter.h"
#include "trace/torch_profiler.h"

namespace dtbench::cli {
namespace {

using Json = nlohmann::ordered_json;


// The configuration every point shares (what --resume must find unchanged).
Json shared_config(const CompareFlags& f) {
  Json c = train_config_json(f.train);
  for (const char* k : {"model", "reducer", "bucket_cap_mb", "compression", "amp", "activation_checkpointing"})
    c.erase(k);
  c["backend"] = f.run.comm.backend;
  c["bind"] = f.run.bind;
  return c;
}

Json final_report(const CompareFlags& f, const Json& env, const bench::GridSpec& spec,
                  const bench::Grid& grid, const std::vector<report::ComparePoint>& points,
                  bool complete) {
  Json doc;
  doc["schema"] = "dtbench.compare";
  doc["schema_version"] = 2;  // as dtbench.ddp's (cmd_ddp.cc)
  doc["kind"] = "report";
  doc["created"] = report::utc_timestamp();
  doc["complete"] = complete;
  doc["command"] = original_args();
  doc["env"] = env;
  doc["config"] = shared_config(f);
  doc["grid"] = {{"models", spec.models},
                 {"world_sizes", spec.world_sizes},
                 {"reducers", spec.reducers},
                 {"bucket_caps_mb", spec.bucket_caps_mb},
                 {"compressions", spec.compressions},
                 {"amps", spec.amps},
                 {"activation_checkpointing", spec.acs}};
  doc["baseline"] = f.baseline;
  doc["skipped"] = grid.skipped;
  doc["jsonl"] = f.resume.empty() ? f.jsonl : f.resume;
  doc["points"] = Json::array();
  for (const auto& p : points) doc["points"].push_back(report::to_json(p));
  return doc;
}

// The points in grid order (resumed ones and new ones interleave).
std::vector<report::ComparePoint> in_grid_order(const bench::Grid& grid,
                                                std::vector<report::ComparePoint> points) {
  std::map<std::string, std::size_t> order;
  for (std::size_t i = 0; i < grid.points.size(); ++i) order[grid.points[i].id()] = i;
  std::vector<report::ComparePoint> out;
  for (auto& p : points)
    if (order.count(p.key.id())) out.push_back(std::move(p));
  std::stable_sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    return order[a.key.id()] < order[b.key.id()];
  });
  return out;
}

int run_compare(CompareFlags& f) {
  // The flags passed check_compare (cmd_compare.cc); what needs LibTorch:
  // the GPUs (the default ranks with --device cuda), each point's model.
  if (!f.world_sizes_given) f.world_sizes = train::default_world_sizes(
        f.train.device, f.train.device == "cuda" ? device::cuda_device_count() : 0);
  const bench::GridSpec spec = compare_spec(f);
  const auto grid = bench::expand_grid(spec);
  f.train.threads = sweep_threads(f.train.threads, spec.world_sizes);
  for (const auto& k : grid.points) check_trainable(point_options(f.train, k), f.run.comm.backend);
  if (!f.train.torch_profiler_path.empty())
    trace::require_kineto(f.train.torch_profiler_path, f.train.device == "cuda");
  device::check_available(f.train.device,
                          *std::max_element(spec.world_sizes.begin(), spec.world_sizes.end()));
  refuse_pod_of_larger_job("compare");
  const auto world = launch::world_from_env(launch::process_env());
  if (world.source != "single")
    throw UsageError(fmt::format(
        "compare starts its own jobs on this host; run it outside {} (it found {} rank(s))",
        world.source, world.world_size));

  // The log: a new one, or the one --resume continues.
  const Json config = shared_config(f);
  SweepLog log(f.jsonl, f.resume, config);
  const std::string& log_path = log.path();
  const auto& done = log.done();
  const auto to_run = bench::remaining_points(grid, done);

  auto env = bench::collect_env();
  report::print_env(std::cout, env);
  std::cout << fmt::format(
      "\nCompare: {} point(s) (models {} × ranks {} × reducers {} × buckets {} MB × compression "
      "{} × amp {}{}); {} already in {}, {} to run\n",
      grid.points.size(), f.models, f.world_sizes, f.reducers, f.bucket_caps, f.compressions,
      f.train.amp,
      f.train.activation_checkpointing == "none" ? ""
                                                 : " × activation checkpointing " + f.train.activation_checkpointing,
      grid.points.size() - to_run.size(), log_path, to_run.size());
  for (const auto& s : grid.skipped) std::cout << "  " << s << "\n";
  std::cout << std::flush;
  log.begin(env, config);

  report::ProgressBar bar(std::cerr, !f.no_progress && isatty(STDERR_FILENO) == 1,
                          static_cast<int>(grid.points.size()),
                          static_cast<int>(grid.points.size() - to_run.size()));
  auto points = done;
  for (const auto& k : to_run) {
    bar.start(k.id());
    const auto outcome = run_ddp_job(point_options(f.train, k), f.run, k.world_size, k.id());
    if (outcome.status != 0) {
      bar.finish();
      if (!f.run.json_path.empty())
        report::write_json_atomic(f.run.json_path,
                                  final_report(f, env, spec, grid, in_grid_order(grid, points), false));
      log::error(fmt::format(
          "point {} failed with exit status {}; the {} point(s) before it are in {} (continue "
          "with --resume {})",
          k.id(), outcome.status, points.size(), log_path, log_path));
      return outcome.status;
    }
    report::ComparePoint p;
    p.key = k;
    p.run = report::ddp_run_from_json(outcome.record.at("run"), "worker record");
    p.extras = outcome.record.at("extras");
    log.append(p);
    points.push_back(std::move(p));
    bar.step_done();
    if (points.back().extras.contains("trace")) {
      std::cout << k.id() << ":\n";
      report::print_trace_summary(std::cout, points.back().extras["trace"]);
      std::cout << std::flush;
    }
    if (!f.run.json_path.empty())
      report::write_json_atomic(f.run.json_path,
                                final_report(f, env, spec, grid, in_grid_order(grid, points), false));
  }
  bar.finish();

  const auto ordered = in_grid_order(grid, points);
  report::CompareConsoleReporter console(std::cout, f.baseline);
  console.all(ordered);
  if (!f.run.json_path.empty()) {
    report::write_json_atomic(f.run.json_path, final_report(f, env, spec, grid, ordered, true));
    std::cout << "\nReport: " << f.run.json_path << "\n";
  }
  std::cout << "Points: " << log_path << "\n";
  return 0;
}

}  // namespace

int compare_job(CompareFlags& f) { return run_compare(f); }

}  // namespace dtbench::cli
