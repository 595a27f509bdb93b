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
#include "cli/ddp_job.h"
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

namespace dtbench::cli {
namespace {

using Json = nlohmann::ordered_json;

struct CompareFlags {
  RunOptions run;
  train::TrainOptions train;
  std::string models = "resnet50";
  std::string world_sizes = "1,2";
  bool world_sizes_given = false;
  std::string reducers = "ddp,overlap,sync";
  std::string bucket_caps = "1,5,10,25,50";
  std::string compressions = "none";
  std::string baseline = "ddp";
  std::string jsonl = "dtbench-compare.jsonl";
  std::string resume;
  bool no_progress = false;
};

std::vector<double> parse_bucket_caps(const std::string& text) {
  std::vector<double> out;
  for (const auto& item : split_list(text)) {
    const auto v = parse_number(item);
    if (!v || !(*v > 0) || *v > 65536)
      throw UsageError(fmt::format(
          "--bucket-cap-mb: '{}' is not a size in MiB above 0 and at most 65536 (in '{}')", item,
          text));
    out.push_back(*v);
  }
  return out;
}

// The configuration every point shares (what --resume must find unchanged).
Json shared_config(const CompareFlags& f) {
  Json c = train_config_json(f.train);
  for (const char* k : {"model", "reducer", "bucket_cap_mb", "compression", "amp"}) c.erase(k);
  c["backend"] = f.run.comm.backend;
  c["bind"] = f.run.bind;
  return c;
}

train::TrainOptions point_options(const train::TrainOptions& base, const report::PointKey& k) {
  auto t = base;
  t.model = k.model;
  t.reducer = k.reducer;
  t.bucket_cap_mb = k.bucket_cap_mb;
  t.compression = k.compression;
  t.amp = k.amp;
  if (k.reducer != "fsdp") {  // fsdp's alone
    t.reshard_after_forward = -1;
    t.param_dtype.clear();
  }
  if (k.reducer != "horovod") t.fusion_threshold_mb = t.cycle_time_ms = -1;  // horovod's
  train::resolve_horovod(t);
  if (!t.trace_path.empty()) t.trace_path = trace_path_for(base.trace_path, k.id());
  return t;
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
                 {"amps", spec.amps}};
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
  finish_run_options(f.run);
  bench::GridSpec spec;
  spec.models = split_list(f.models);
  if (!f.world_sizes_given) f.world_sizes = train::default_world_sizes(
        f.train.device, f.train.device == "cuda" ? device::cuda_device_count() : 0);
  spec.world_sizes = parse_world_sizes(f.world_sizes);
  spec.reducers = split_list(f.reducers);
  spec.bucket_caps_mb = parse_bucket_caps(f.bucket_caps);
  spec.compressions = split_list(f.compressions);
  spec.amps = split_list(f.train.amp);  // a list here: one column per setting
  const auto grid = bench::expand_grid(spec);
  f.train.threads = sweep_threads(f.train.threads, spec.world_sizes);
  if (std::find(spec.reducers.begin(), spec.reducers.end(), f.baseline) == spec.reducers.end())
    throw UsageError(fmt::format("--baseline '{}' is not one of --reducers {}", f.baseline,
                                 f.reducers));
  if (f.train.reshard_after_forward != -1 &&
      std::find(spec.reducers.begin(), spec.reducers.end(), "fsdp") == spec.reducers.end())
    throw UsageError("--reshard-after-forward is fsdp's: add fsdp to --reducers");
  if (!f.train.param_dtype.empty() &&
      std::find(spec.reducers.begin(), spec.reducers.end(), "fsdp") == spec.reducers.end())
    throw UsageError("--param-dtype is fsdp's: add fsdp to --reducers");
  if ((f.train.fusion_threshold_mb != -1 || f.train.cycle_time_ms != -1) &&
      std::find(spec.reducers.begin(), spec.reducers.end(), "horovod") == spec.reducers.end())
    throw UsageError("--fusion-threshold-mb and --cycle-time-ms are horovod's: add horovod to --reducers");
  for (const auto& k : grid.points) check_trainable(point_options(f.train, k), f.run.comm.backend);
  if (f.train.inject_delay_rank >= *std::max_element(spec.world_sizes.begin(), spec.world_sizes.end()))
    throw UsageError(fmt::format("--inject-delay: there is no rank {} in --world-sizes {}",
                                 f.train.inject_delay_rank, f.world_sizes));
  plan_local_binding(f.run.bind, *std::max_element(spec.world_sizes.begin(), spec.world_sizes.end()));
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
      "{} × amp {}); {} already in {}, {} to run\n",
      grid.points.size(), f.models, f.world_sizes, f.reducers, f.bucket_caps, f.compressions,
      f.train.amp,
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

Action register_compare(CLI::App& app) {
  auto f = std::make_shared<CompareFlags>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare gradient-sync strategies: reducers × bucket sizes × compression × amp × world "
      "sizes × models, each point a full ddp run");
  add_run_options(*cmd, f->run, /*with_nproc=*/false);
  cmd->add_option("--models", f->models, "Models to sweep (see `dtbench models`)")
      ->capture_default_str();
  auto* world_sizes = cmd->add_option("--world-sizes", f->world_sizes,
                                      "Rank counts to sweep on this host (1 gives the scaling-efficiency "
                                      "reference; with --device cuda the default is 1,2,4,... up to the "
                                      "GPUs visible)")
                          ->capture_default_str();
  cmd->add_option("--reducers", f->reducers,
                  "Strategies: ddp, overlap, sync, allreduce-after-backward, zero1, zero2, fsdp (sharded)")
      ->capture_default_str();
  cmd->add_option("--bucket-cap-mb", f->bucket_caps, "Bucket capacities in MiB to sweep")
      ->capture_default_str();
  cmd->add_option("--compression", f->compressions,
                  "Allreduce wire formats to sweep: none, fp16, bf16 (own reducers only)")
      ->capture_default_str();
  cmd->add_option("--baseline", f->baseline, "Reducer the delta% columns are measured against")
      ->capture_default_str();
  cmd->add_option("--jsonl", f->jsonl, "Append every finished point to this JSON-lines file")
      ->capture_default_str();
  cmd->add_option("--resume", f->resume,
                  "Continue the sweep logged in this JSON-lines file: skip its points, append "
                  "the rest to it");
  cmd->add_flag("--no-progress", f->no_progress, "Plain progress lines even on a terminal");
  add_train_flags(*cmd, f->train, /*grid=*/true);
  return [f, world_sizes]() {
    f->world_sizes_given = world_sizes->count() > 0;
    return run_compare(*f);
  };
}

}  // namespace dtbench::cli
