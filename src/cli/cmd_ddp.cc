// `dtbench ddp`: data-parallel training benchmark (PyTorch's
// benchmarks/distributed/ddp/benchmark.py in C++). Three ways to run:
//  - sweep (default, outside any launcher): this process starts one job per
//    row — the "no ddp" baseline, then each --world-sizes entry — through
//    dtbench's launcher (mpirun for --backend mpi), collects each job's
//    record and prints/writes the table;
//  - row worker (--run-json, internal): one job of the sweep;
//  - external launcher (torchrun/mpirun/srun environment): one run on the
//    world that launcher built.
// The command's flags; its run is ddp_job (cli/jobs/ddp.cc).
#include <algorithm>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/jobs.h"
#include "cli/run_options.h"
#include "cli/train_flags.h"
#include "core/error.h"
#include "train/train_options.h"
#include "report/ddp_record.h"

namespace dtbench::cli {

void check_ddp_world_sizes(const DdpFlags& f, const std::vector<int>& sizes) {
  // A replica: tp · pp ranks (the model-parallel product).
  const int tp = f.train.tp, mp = f.train.tp * f.train.pp;
  const std::string layout = f.train.pp == 1 ? fmt::format("--tp {}", tp)
                             : tp == 1        ? fmt::format("--pp {}", f.train.pp)
                                              : fmt::format("--tp {} x --pp {}", tp, f.train.pp);
  if (f.train.reducer == "none")
    for (int w : sizes)
      if (w > mp)
        throw UsageError(mp > 1 ? fmt::format("--reducer none trains without synchronisation: with {} use "
                                              "--world-sizes {} (one replica)",
                                              layout, mp)
                                : "--reducer none trains without synchronisation: use --world-sizes 1");
  for (int w : sizes) {
    if (w % mp != 0)
      throw UsageError(fmt::format("{}: {} rank(s) do not split into replicas of {} "
                                   "(every --world-sizes entry must be a multiple of {})",
                                   layout, w, mp, mp));
    if (mp > 1 && w > mp && f.run.comm.backend == "mpi")
      throw UsageError(fmt::format("{} at {} ranks needs model- and data-parallel sub-group communicators, "
                                   "which dtbench's mpi backend does not make: use --backend gloo, or --world-sizes {}",
                                   layout, w, mp));
    if (w > mp) {
      const auto why = train::pipeline_reducer_refusal(f.train);
      if (!why.empty()) throw UsageError(why);
    }
    if (tp > 1 && f.train.pp > 1 && f.run.comm.backend == "mpi")
      throw UsageError(fmt::format("{} needs tensor- and pipeline-parallel sub-group communicators, which dtbench's "
                                   "mpi backend does not make: use --backend gloo", layout));
  }
  if (!f.run_json.empty()) return;  // a row worker: its row's ranks
  if (f.train.inject_delay_rank >= *std::max_element(sizes.begin(), sizes.end()))
    throw UsageError(fmt::format("--inject-delay: there is no rank {} in --world-sizes {}",
                                 f.train.inject_delay_rank, f.world_sizes));
}

namespace {

// What can be checked without LibTorch; the job checks the rest.
void check_ddp(DdpFlags& f) {
  finish_run_options(f.run);  // backend built in, --timeout, --json writable
  check_train_flags(f.train, f.run.comm.backend);
  report::parse_percentiles(f.percentiles, "--percentiles");
  // Without --world-sizes, --device cuda sweeps the GPUs there are: the job counts them.
  if (!f.world_sizes_given && f.train.device != "cpu") return;
  check_ddp_world_sizes(f, parse_world_sizes(f.world_sizes_given ? f.world_sizes
                                                                  : train::default_world_sizes("cpu", 0, f.train.tp * f.train.pp)));
}

}  // namespace

Action register_ddp(CLI::App& app) {
  auto f = std::make_shared<DdpFlags>();
  // `train`: the benchmark trains with more than data parallelism (--tp);
  // `ddp`, the seed's name (PyTorch's DDP benchmark's), stays the same command.
  auto* cmd = app.add_subcommand("train",
                                 "Training benchmark, PyTorch's DDP benchmark's table: sec/iter and examples/s "
                                 "per world size, data-parallel strategy (--reducer), tensor-parallel "
                                 "degree (--tp) and pipeline (--pp)");
  cmd->alias("ddp");
  add_run_options(*cmd, f->run, /*with_nproc=*/false);
  // PyTorch's DDP benchmark (benchmark.py) runs DistributedDataParallel with
  // broadcast_buffers=False.
  f->train.broadcast_buffers = false;
  add_train_flags(*cmd, f->train, /*grid=*/false);
  cmd->add_option("--tp", f->train.tp,
                  "Tensor-parallel degree (torchtitan's tensor_parallel_degree): groups of TP consecutive "
                  "ranks split each block of a gpt or llama model Megatron-LM's way (attention by heads, "
                  "the MLP by width) and train one replica's batch; --reducer keeps the world/TP replicas "
                  "in step. Every --world-sizes entry must be a multiple; --batch-size is per replica")
      ->capture_default_str();
  cmd->add_option("--pp", f->train.pp,
                  "Pipeline-parallel degree (torchtitan's pipeline_parallel_degree): a gpt or llama model's "
                  "blocks cut into PP stages (embedding first, head and loss last), ranks TP x DP apart; "
                  "the local batch runs through them in --microbatches by --pp-schedule")
      ->capture_default_str();
  cmd->add_option("--pp-schedule", f->train.pp_schedule, "With --pp: gpipe, 1f1b or interleaved-1f1b")
      ->capture_default_str();
  cmd->add_option("--microbatches", f->train.microbatches,
                  "With --pp: microbatches the local batch is cut into (default: the batch size, microbatches "
                  "of one example, torchtitan's default)");
  cmd->add_option("--stages-per-rank", f->train.stages_per_rank,
                  "With --pp-schedule interleaved-1f1b: stages (model chunks) each rank holds")
      ->capture_default_str();
  auto* world_sizes =
      cmd->add_option("--world-sizes", f->world_sizes,
                      "Rank counts to sweep on this host, e.g. 1,2,4 (with --device cuda the "
                      "default is 1,2,4,... up to the GPUs visible; with --tp T: T (CPU), T,2T,4T,... "
                      "(GPUs); under an external launcher: its world size)")
          ->capture_default_str();
  cmd->add_flag("--no-baseline", f->no_baseline, "Leave out the single-process \"no ddp\" row");
  cmd->add_option("--percentiles", f->percentiles, "Percentile columns of the table")
      ->capture_default_str();
  cmd->add_option("--jsonl", f->jsonl,
                  "Append every finished row to this JSON-lines log (continue it with --resume)");
  cmd->add_option("--resume", f->resume,
                  "Continue an interrupted sweep from its --jsonl log: finished rows are kept, the "
                  "rest run");
  cmd->add_option("--run-json", f->run_json, "(internal) row worker: write the record here")
      ->group("");
  cmd->add_option("--label", f->label, "(internal) row label")->group("");
  return [f, world_sizes]() {
    f->world_sizes_given = world_sizes->count() > 0;
    check_ddp(*f);
    return ddp_job(*f);
  };
}

}  // namespace dtbench::cli
