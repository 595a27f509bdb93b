// `dtbench compare`: which way of synchronising gradients is fastest here,
// and how does each scale? Sweeps models × world sizes × reducers × bucket
// sizes × compressions × amp settings × activation checkpointing, each point a full `ddp` job (cli/ddp_job), appends
// every finished point to a JSON-lines log (--resume continues one), then
// prints the per-phase tables, the throughput/efficiency table and the
// compression errors.
// The command's flags; its run is compare_job (cli/jobs/compare.cc).
#include <algorithm>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/jobs.h"
#include "cli/run_options.h"
#include "cli/train_flags.h"
#include "core/error.h"
#include "core/units.h"

namespace dtbench::cli {
namespace {

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

}  // namespace

train::TrainOptions point_options(const train::TrainOptions& base, const report::PointKey& k) {
  auto t = base;
  t.model = k.model;
  t.reducer = k.reducer;
  t.bucket_cap_mb = k.bucket_cap_mb;
  t.compression = k.compression;
  t.amp = k.amp;
  t.activation_checkpointing = k.ac;
  if (k.reducer != "fsdp") {  // fsdp's alone
    t.reshard_after_forward = -1;
    t.param_dtype.clear();
  }
  if (k.reducer != "horovod") t.fusion_threshold_mb = t.cycle_time_ms = -1;  // horovod's
  train::resolve_horovod(t);
  if (!t.trace_path.empty()) t.trace_path = trace_path_for(base.trace_path, k.id());
  if (!t.torch_profiler_path.empty()) t.torch_profiler_path = trace_path_for(base.torch_profiler_path, k.id());
  return t;
}

bench::GridSpec compare_spec(const CompareFlags& f, bool ranks_known) {
  bench::GridSpec spec;
  spec.models = split_list(f.models);
  spec.world_sizes = parse_world_sizes(f.world_sizes);
  spec.reducers = split_list(f.reducers);
  spec.bucket_caps_mb = parse_bucket_caps(f.bucket_caps);
  spec.compressions = split_list(f.compressions);
  spec.amps = split_list(f.train.amp);  // a list here: one column per setting
  spec.acs = split_list(f.train.activation_checkpointing);  // a list too
  bench::expand_grid(spec);  // each list's values, and a grid with a point that can run
  const auto has = [&](const char* reducer) {
    return std::find(spec.reducers.begin(), spec.reducers.end(), reducer) != spec.reducers.end();
  };
  if (!has(f.baseline.c_str()))
    throw UsageError(fmt::format("--baseline '{}' is not one of --reducers {}", f.baseline, f.reducers));
  if (f.train.reshard_after_forward != -1 && !has("fsdp"))
    throw UsageError("--reshard-after-forward is fsdp's: add fsdp to --reducers");
  if (!f.train.param_dtype.empty() && !has("fsdp")) throw UsageError("--param-dtype is fsdp's: add fsdp to --reducers");
  if ((f.train.fusion_threshold_mb != -1 || f.train.cycle_time_ms != -1) && !has("horovod"))
    throw UsageError("--fusion-threshold-mb and --cycle-time-ms are horovod's: add horovod to --reducers");
  if (!ranks_known) return spec;
  const int widest = *std::max_element(spec.world_sizes.begin(), spec.world_sizes.end());
  if (f.train.inject_delay_rank >= widest)
    throw UsageError(fmt::format("--inject-delay: there is no rank {} in --world-sizes {}",
                                 f.train.inject_delay_rank, f.world_sizes));
  plan_local_binding(f.run.bind, widest);
  return spec;
}

namespace {

// What can be checked without LibTorch; the job checks the rest.
void check_compare(CompareFlags& f) {
  finish_run_options(f.run);
  // Without --world-sizes, --device cuda compares on the GPUs there are: the
  // job counts them, and checks what depends on the widest rank count.
  const bool ranks_known = f.world_sizes_given || f.train.device == "cpu";
  CompareFlags g = f;
  if (!g.world_sizes_given) g.world_sizes = ranks_known ? train::default_world_sizes("cpu", 0) : "1";
  for (const auto& k : bench::expand_grid(compare_spec(g, ranks_known)).points)
    check_train_flags(point_options(g.train, k), g.run.comm.backend);
}

}  // namespace

Action register_compare(CLI::App& app) {
  auto f = std::make_shared<CompareFlags>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare gradient-sync strategies: reducers × bucket sizes × compression × amp × activation "
      "checkpointing × world "
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
    check_compare(*f);
    return compare_job(*f);
  };
}

}  // namespace dtbench::cli
