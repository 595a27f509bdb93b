// `dtbench project`: iteration time and scaling efficiency at rank counts
// that were not measured, from a 1-rank compute profile (a ddp report with
// --trace, or a model and per-phase times) and a network (measured `dtbench
// comm` reports, or bandwidth and latency per level). docs/metrics.md
// "Projection" derives the model.
// The command's flags; its run is project_job (cli/jobs/project.cc).
#include <algorithm>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/jobs.h"
#include "core/error.h"
#include "core/units.h"
#include "project/comm_fit.h"
#include "report/json_io.h"
#include "train/train_options.h"

namespace dtbench::cli {
namespace {

std::vector<int> parse_projected_world_sizes(const std::string& text) {
  std::vector<int> out;
  for (const auto& item : split_list(text)) {
    const auto v = parse_number(item);
    if (!v || *v < 1 || *v > 1e7 || *v != static_cast<int>(*v))
      throw UsageError(fmt::format("--world-sizes: '{}' is not a rank count (a whole number >= 1)", item));
    out.push_back(static_cast<int>(*v));
  }
  if (out.empty()) throw UsageError("--world-sizes: no rank counts given");
  return out;
}

// A level from --X-bw/--X-latency or --comm-X (with its all_gather and
// reduce_scatter fits where the report swept them); `needed` says whether
// some world size uses it.
project::MeasuredLevel make_level(const std::string& bw, const std::string& latency, const std::string& report,
                                  const std::string& name, bool needed) {
  if (!report.empty()) {
    if (!bw.empty() || !latency.empty())
      throw UsageError(fmt::format("--comm-{0} and --{0}-bw/--{0}-latency both describe the same level: give one",
                                   name));
    return project::level_from_comm_report(report, "--comm-" + name);
  }
  if (bw.empty() != latency.empty())
    throw UsageError(fmt::format("--{0}-bw and --{0}-latency go together (e.g. --{0}-bw 100Gbit/s --{0}-latency 5us)",
                                 name));
  if (bw.empty()) {
    if (needed)
      throw UsageError(fmt::format("the network {} is not described: give --{}-bw and --{}-latency, or --comm-{} "
                                   "REPORT (a `dtbench comm` allreduce sweep over it)",
                                   name == "intra" ? "inside a node" : "between nodes", name, name, name));
    return {};
  }
  project::MeasuredLevel m;
  m.level.bus_bw = parse_bandwidth(bw, "--" + name + "-bw");
  m.level.latency_s = parse_seconds(latency, "--" + name + "-latency");
  return m;
}

}  // namespace

ProjectPlan project_plan(const ProjectFlags& f) {
  if (!f.json.empty()) report::require_writable_path(f.json, "--json");
  if (f.profile.empty() == f.model.empty())
    throw UsageError("give the compute profile either as --profile REPORT (a `dtbench ddp --trace` report) or as "
                     "--model with --forward-ms/--backward-ms/--optimizer-ms, not both");
  if (f.ranks_per_node < 1) throw UsageError("--ranks-per-node must be at least 1");
  if (!(f.bw_scale > 0)) throw UsageError("--bw-scale must be positive");
  if (f.cores_per_node < 0) throw UsageError("--cores-per-node must not be negative");
  if (f.threads < 0) throw UsageError("--threads must not be negative");
  if (f.threads > 0 && !f.profile.empty())
    throw UsageError("--threads goes with --model; a --profile report says the threads it ran with");
  if (!f.profile.empty() && !f.model_only_given.empty())
    throw UsageError(fmt::format(
        "{}: options of --model; a --profile report is projected at the image size and phase times it ran "
        "(profile the size to project: `dtbench ddp --world-sizes 1 --trace T --json R`; --batch-size and "
        "--seq-len move a report's profile)",
        fmt::join(f.model_only_given, ", ")));
  ProjectPlan plan;
  auto& o = plan.options;
  plan.search = f.search;
  plan.strategies = project::parse_strategies(f.search && !f.reducers_given ? "ddp,horovod,zero1,zero2,fsdp" : f.reducers);
  if (f.search) {
    if (!f.layout_given.empty())
      throw UsageError(fmt::format("--search chooses the layout: leave out {}", fmt::join(f.layout_given, ", ")));
    if (f.memory_per_rank.empty())
      throw UsageError("--search needs --memory-per-rank: the layouts that fit are ranked");
    if (split_list(f.world_sizes).size() != 1)
      throw UsageError("--search lays out one world size: give --world-sizes N");
    if (f.top < 1) throw UsageError("--top must be at least 1");
  } else if (f.top_given || f.global_batch != 0) {
    throw UsageError("--top and --global-batch go with --search");
  }
  if (f.global_batch < 0 || f.global_batch > (std::int64_t{1} << 40))
    throw UsageError("--global-batch must be between 1 and 2^40");
  const auto& strategies = plan.strategies;
  if (f.optimizer == "sgd") o.memory.optimizer_states = 1;
  else if (f.optimizer == "adamw") o.memory.optimizer_states = 2;
  else throw UsageError(fmt::format("--optimizer: '{}' is not an optimizer (use sgd or adamw)", f.optimizer));
  if (f.param_dtype == "bf16") o.memory.param_bytes = 2;
  else if (f.param_dtype != "float32")
    throw UsageError(fmt::format("--param-dtype: '{}' is not a parameter dtype (use float32 or bf16)", f.param_dtype));
  if (f.reshard_after_forward == "false") o.memory.reshard_after_forward = false;
  else if (f.reshard_after_forward != "true")
    throw UsageError(fmt::format("--reshard-after-forward: '{}' is not true or false", f.reshard_after_forward));
  const bool fsdp = std::find(strategies.begin(), strategies.end(), project::Strategy::kFsdp) != strategies.end();
  if (!fsdp && (f.param_dtype != "float32" || f.reshard_after_forward != "true"))
    throw UsageError("--param-dtype and --reshard-after-forward describe fsdp: add fsdp to --reducer");
  if (!f.memory_per_rank.empty()) {
    o.memory_limit = static_cast<double>(parse_bytes(f.memory_per_rank, "--memory-per-rank"));
    if (!(o.memory_limit > 0)) throw UsageError("--memory-per-rank must be positive");
  }
  {
    train::TrainOptions h;  // Horovod's knobs as dtbench ddp resolves them
    h.reducer = "horovod";
    h.fusion_threshold_mb = f.fusion_threshold_mb;
    h.cycle_time_ms = f.cycle_time_ms;
    if ((f.fusion_threshold_mb != -1 && !(f.fusion_threshold_mb >= 0)) || (f.cycle_time_ms != -1 && !(f.cycle_time_ms > 0)))
      throw UsageError("--fusion-threshold-mb must not be negative and --cycle-time-ms must be positive");
    train::resolve_horovod(h);
    o.horovod.threshold_bytes = h.fusion_threshold_mb * 1024 * 1024;
    o.horovod.cycle_s = h.cycle_time_ms / 1e3;
  }
  if (f.reduce_scatter == "allreduce") o.reduce_scatter_as_allreduce = true;
  else if (f.reduce_scatter != "native")
    throw UsageError(fmt::format("--reduce-scatter: '{}' is not native or allreduce", f.reduce_scatter));
  if (!f.activation_memory.empty() && !f.profile.empty())
    throw UsageError("--activation-memory goes with --model; a --profile report's activations are measured");
  o.world_sizes = parse_projected_world_sizes(f.world_sizes);
  {
    auto& l = o.layout;
    l.tp = f.tp;
    l.pp = f.pp;
    l.cp = f.cp;
    l.microbatches = f.microbatches;
    l.stages_per_rank = f.stages_per_rank;
    l.schedule = project::parse_pp_schedule(f.pp_schedule);
    l.recompute = layout::parse_recompute(f.activation_checkpointing);
    l.sequence_parallel = f.sequence_parallel;
    l.loss_parallel = f.loss_parallel;
    if (f.attention == "flash") l.flash_attention = true;
    else if (f.attention != "eager")
      throw UsageError(fmt::format("--attention: '{}' is not eager or flash", f.attention));
    if (f.amp != "none" && f.amp != "bf16" && f.amp != "fp16")
      throw UsageError(fmt::format("--amp: '{}' is not none, bf16 or fp16", f.amp));
    // Activations in 16 bits under autocast or with FSDP2's bf16 parameters.
    l.activation_bytes = f.amp != "none" || f.param_dtype == "bf16" ? 2 : 4;
    if (f.pp_schedule_given && l.pp == 1)
      throw UsageError("--pp-schedule orders a pipeline's microbatches: give --pp");
  }
  o.algo = project::parse_algo(f.algo);
  o.overlap = !f.no_overlap;
  o.cores_per_node = f.cores_per_node;
  if (f.compression == "fp16" || f.compression == "bf16") o.wire_ratio = 0.5;
  else if (f.compression != "none")
    throw UsageError(fmt::format("--compression: '{}' is not a wire format (use none, fp16 or bf16)", f.compression));
  if (f.bucket_cap_given) o.memory.bucket_cap_bytes = f.bucket_cap_mb * 1024 * 1024;
  if (f.bucket_cap_given || f.first_bucket_cap_given) {
    if ((f.bucket_cap_given && !(f.bucket_cap_mb > 0)) || (f.first_bucket_cap_given && !(f.first_bucket_cap_mb > 0)))
      throw UsageError("--bucket-cap-mb and --first-bucket-cap-mb must be positive");
    project::BucketOptions b;
    if (f.bucket_cap_given) b.cap_bytes = f.bucket_cap_mb * 1024 * 1024;
    if (f.first_bucket_cap_given) b.first_cap_bytes = f.first_bucket_cap_mb * 1024 * 1024;
    o.rebucket = b;
  }
  o.net.ranks_per_node = f.ranks_per_node;
  int max_world = 1;
  for (int w : o.world_sizes) max_world = std::max(max_world, w);
  const bool multi_node = max_world > f.ranks_per_node;
  const bool multi_rank_node = std::min(max_world, f.ranks_per_node) > 1;
  const auto intra = make_level(f.intra_bw, f.intra_latency, f.comm_intra, "intra", multi_rank_node);
  const auto inter = make_level(f.inter_bw, f.inter_latency, f.comm_inter, "inter", multi_node);
  o.net.intra = intra.level;
  o.net.inter = inter.level;
  o.net.all_gather = {intra.all_gather, inter.all_gather};
  o.net.reduce_scatter = {intra.reduce_scatter, inter.reduce_scatter};
  o.net.base_latency_s = parse_seconds(f.base_latency, "--base-latency");
  auto scale = [&](project::Level& l) {
    l.bus_bw *= f.bw_scale;
    for (auto& pt : l.curve) pt.second /= f.bw_scale;
  };
  scale(o.net.intra);
  scale(o.net.inter);
  for (auto* s : {&o.net.all_gather, &o.net.reduce_scatter})
    for (auto* l : {&s->intra, &s->inter})
      if (*l) scale(**l);
  return plan;
}

Action register_project(CLI::App& app) {
  auto f = std::make_shared<ProjectFlags>();
  auto* cmd = app.add_subcommand(
      "project", "Project iteration time and scaling efficiency to 2-4096 ranks from a 1-rank profile and a network model");
  cmd->footer(
      "Profile: --profile REPORT (from `dtbench ddp --world-sizes 1 --trace T --json REPORT`), or --model M "
      "--forward-ms F --backward-ms B --optimizer-ms O.\nNetwork: per level either measured (--comm-intra / "
      "--comm-inter: `dtbench comm` allreduce reports) or stated (--intra-bw/--intra-latency, "
      "--inter-bw/--inter-latency; bandwidths as 100Gbit/s, 4x100Gb/s, 12.5GB/s).\nThe model: docs/metrics.md "
      "\"Projection\".");
  cmd->add_option("--profile", f->profile, "A `dtbench ddp` report with a 1-rank row traced (--trace) to profile");
  cmd->add_option("--row", f->row, "Label of the 1-rank row to profile (default: the first traced 1-rank DDP row)");
  cmd->add_option("--measured", f->measured,
                  "Other `dtbench ddp` reports: their multi-rank rows are set beside the projection, their 1-rank rows give "
                  "a strategy its own fixed cost and peak (repeatable)");
  cmd->add_option("-m,--model", f->model, "Profile from this model's layers (see `dtbench models`) and the phase times");
  cmd->add_option("-b,--batch-size", f->batch_size,
                  "Examples per rank (with --model; with --profile: project at this batch, compute and activations "
                  "scaled from the report's)")
      ->capture_default_str();
  cmd->add_option("--image-size", f->image_size, "Image side (with --model)")->capture_default_str();
  cmd->add_option("--seq-len", f->seq_len,
                  "Tokens per example (with --model transformer; with --profile of a gpt2/llama report: project at "
                  "this length, compute from the shapes' FLOPs, activations linear plus the attention's T^2)")
      ->capture_default_str();
  cmd->add_option("--layers", f->layers, "With --model of a gpt2/llama preset: its blocks (0 = the preset's)");
  cmd->add_option("--width", f->width, "With --model of a gpt2/llama preset: its width (0 = the preset's)");
  cmd->add_option("--heads", f->heads, "With --model of a gpt2/llama preset: attention heads (0 = the preset's)");
  cmd->add_option("--kv-heads", f->kv_heads, "With --model of a llama preset: key/value heads (0 = the preset's)");
  cmd->add_option("--vocab", f->vocab, "With --model of a gpt2/llama preset: vocabulary (0 = the preset's)");
  cmd->add_option("--ffn-hidden-size", f->ffn_hidden_size,
                  "With --model of a llama preset: the feed-forward's hidden width (0 = the preset's)");
  cmd->add_option("--forward-ms", f->forward_ms, "One rank's forward + loss, ms (with --model)");
  cmd->add_option("--backward-ms", f->backward_ms, "One rank's backward compute, ms (with --model)");
  cmd->add_option("--optimizer-ms", f->optimizer_ms, "One rank's optimizer step, ms (with --model)");
  cmd->add_option("--tflops", f->tflops,
                  "Instead of --forward-ms/--backward-ms (with --model): achieved training TFLOP/s of one rank over the "
                  "whole step, as a 1-rank row's: 6 x the shapes' multiply-adds x batch / rate = forward + backward + "
                  "--optimizer-ms, backward twice forward");
  cmd->add_option("--peak-tflops", f->peak_tflops, "With --mfu, instead of --tflops: the rank's peak TFLOP/s");
  cmd->add_option("--mfu", f->mfu, "With --peak-tflops: the model FLOPs utilisation of one rank's whole step (a 1-rank row's mfu), a "
                  "fraction (0.4 = 40 %)");
  cmd->add_option("--ddp-overhead-ms", f->ddp_overhead_ms,
                  "DDP's fixed cost per iteration at 1 rank, ms (with --model; 1-rank DDP - no ddp)")
      ->capture_default_str();
  cmd->add_option("--threads", f->threads, "Intra-op threads per rank the phase times were taken with (with --model)");
  cmd->add_option("--ranks-per-node", f->ranks_per_node, "Ranks per node (GPUs per machine)")->capture_default_str();
  cmd->add_option("--cores-per-node", f->cores_per_node,
                  "CPU training: the cores of a node, shared by the ranks' threads and what their allreduces keep "
                  "busy (the comm reports' cpu_util); 0 = no contention (GPUs)")
      ->capture_default_str();
  cmd->add_option("--intra-bw", f->intra_bw, "Bus bandwidth between the ranks of a node (e.g. 130GB/s)");
  cmd->add_option("--intra-latency", f->intra_latency, "Latency per collective step inside a node (e.g. 3.4us)");
  cmd->add_option("--inter-bw", f->inter_bw, "Bandwidth of a node's NICs together (e.g. 4x100Gbit/s)");
  cmd->add_option("--inter-latency", f->inter_latency, "Latency per collective step between nodes (e.g. 9.6us)");
  cmd->add_option("--base-latency", f->base_latency, "Fixed latency of every collective (e.g. 8.4us)")
      ->capture_default_str();
  cmd->add_option("--comm-intra", f->comm_intra, "A `dtbench comm` report of one node's ranks (measured level): its allreduce sweep, and its allgather/reduce_scatter sweeps for the sharded strategies where it has them");
  cmd->add_option("--comm-inter", f->comm_inter, "A `dtbench comm` report across nodes, best 1 rank per node (allreduce; allgather/reduce_scatter as --comm-intra)");
  cmd->add_option("--algo", f->algo, "Allreduce algorithm: ring, tree or auto (the cheaper per bucket, as NCCL)")
      ->capture_default_str();
  cmd->add_option("--world-sizes", f->world_sizes, "Rank counts to project")->capture_default_str();
  auto* cap = cmd->add_option("--bucket-cap-mb", f->bucket_cap_mb, "What if: re-bucket the gradients at this capacity, MiB");
  auto* first = cmd->add_option("--first-bucket-cap-mb", f->first_bucket_cap_mb, "What if: first bucket's capacity, MiB");
  cmd->add_option("--compression", f->compression, "What if: allreduce in fp16 or bf16 (half the bytes)")
      ->capture_default_str();
  cmd->add_flag("--no-overlap", f->no_overlap, "What if: every allreduce after backward ends");
  cmd->add_option("--bw-scale", f->bw_scale, "What if: every bandwidth times this (2 = a network twice as fast)")
      ->capture_default_str();
  cmd->add_option("--reducer", f->reducers,
                  "Strategies to project, comma-separated: ddp, horovod, zero1, zero2, fsdp (fsdp: a decoder's units)")
      ->capture_default_str();
  cmd->add_option("--optimizer", f->optimizer,
                  "Optimizer whose state the memory counts: sgd (momentum) or adamw (default: a --profile report's, "
                  "else sgd)")
      ->capture_default_str();
  cmd->add_option("--param-dtype", f->param_dtype,
                  "fsdp: dtype units are gathered and computed in (bf16 = FSDP2's MixedPrecisionPolicy, float32 "
                  "reduction)")
      ->capture_default_str();
  cmd->add_option("--reshard-after-forward", f->reshard_after_forward,
                  "fsdp: free each unit after its forward and gather it again in backward (true/false)")
      ->capture_default_str();
  cmd->add_option("--memory-per-rank", f->memory_per_rank,
                  "Memory of one rank (e.g. 80GiB): which strategies fit, and the largest batch that does");
  cmd->add_option("--activation-memory", f->activation_memory,
                  "One rank's activations at --batch-size (with --model; e.g. 12GiB): memory beside the model states");
  cmd->add_option("--fusion-threshold-mb", f->fusion_threshold_mb,
                  "horovod: fusion threshold, MiB (default HOROVOD_FUSION_THRESHOLD, else Horovod's 128)");
  cmd->add_option("--cycle-time-ms", f->cycle_time_ms,
                  "horovod: background loop cycle, ms (default HOROVOD_CYCLE_TIME, else Horovod's 1)");
  cmd->add_option("--reduce-scatter", f->reduce_scatter,
                  "zero1/zero2/fsdp: native (a ring reduce_scatter) or allreduce (a backend without one of its own, as "
                  "Gloo, where dtbench ddp allreduces the bucket)")
      ->capture_default_str();
  cmd->add_option("--tp", f->tp, "Layout: tensor-parallel degree (Megatron-LM's split of a decoder's blocks, inside a "
                  "node while it fits)")->capture_default_str();
  cmd->add_option("--cp", f->cp,
                  "Layout: context-parallel degree (each sequence split over cp ranks, ring attention's key/value "
                  "passes; the strategy shards over dp x cp)")
      ->capture_default_str();
  cmd->add_option("--pp", f->pp, "Layout: pipeline stages (blocks split evenly, embedding first, head last)")
      ->capture_default_str();
  cmd->add_option("--pp-schedule", f->pp_schedule, "Layout: gpipe, 1f1b or interleaved-1f1b (with --pp)")
      ->capture_default_str();
  cmd->add_option("--microbatches", f->microbatches, "Layout: microbatches the local batch is split into (with --pp)")
      ->capture_default_str();
  cmd->add_option("--stages-per-rank", f->stages_per_rank,
                  "Layout: model chunks per pipeline rank (interleaved-1f1b's v)")
      ->capture_default_str();
  cmd->add_flag("--sequence-parallel", f->sequence_parallel,
                "Layout: norms on sequence shards, each TP allreduce a reduce-scatter + all-gather (with --tp)");
  cmd->add_flag("--loss-parallel", f->loss_parallel,
                "Layout: embedding, head and loss split by vocabulary over the TP group (torchtitan's loss_parallel; "
                "without it they are replicated, as dtbench train --tp)");
  cmd->add_option("--activation-checkpointing", f->activation_checkpointing,
                  "none, full (every block recomputed in backward) or selective (the attention core)")
      ->capture_default_str();
  cmd->add_option("--amp", f->amp, "Activations' precision: none (float32), bf16 or fp16 (16 bits, as with --param-dtype "
                  "bf16)")->capture_default_str();
  cmd->add_option("--attention", f->attention,
                  "Attention kernel: eager keeps the softmax probabilities (dtbench's models), flash does not (SDPA on a "
                  "GPU, torchtitan)")->capture_default_str();
  cmd->add_flag("--search", f->search,
                "Every layout of the one --world-sizes N for a decoder (tp within a node, pp, strategy, recomputation, "
                "schedule, microbatches), those over --memory-per-rank dropped, the rest ranked by tokens/s per rank");
  cmd->add_option("--top", f->top, "--search: how many layouts to show")->capture_default_str();
  cmd->add_option("--global-batch", f->global_batch,
                  "--search: the whole job's batch (each layout's local batch = this / dp); default: --batch-size per "
                  "data-parallel rank");
  cmd->add_option("--json", f->json, "Write the projection as JSON here (schema dtbench.project)");
  return [f, cap, first, cmd]() {
    f->pp_schedule_given = cmd->get_option("--pp-schedule")->count() > 0;
    f->reducers_given = cmd->get_option("--reducer")->count() > 0;
    f->top_given = cmd->get_option("--top")->count() > 0;
    f->optimizer_given = cmd->get_option("--optimizer")->count() > 0;
    for (const char* name : {"--tp", "--pp", "--cp", "--pp-schedule", "--microbatches", "--stages-per-rank",
                             "--sequence-parallel", "--loss-parallel", "--activation-checkpointing"})
      if (cmd->get_option(name)->count() > 0) f->layout_given.push_back(name);
    f->bucket_cap_given = cap->count() > 0;
    f->first_bucket_cap_given = first->count() > 0;
    for (const char* name : {"--image-size", "--forward-ms", "--backward-ms", "--optimizer-ms", "--ddp-overhead-ms",
                             "--tflops", "--peak-tflops", "--mfu", "--layers", "--width", "--heads", "--kv-heads",
                             "--vocab", "--ffn-hidden-size"})
      if (cmd->get_option(name)->count() > 0) f->model_only_given.push_back(name);
    f->batch_given = cmd->get_option("--batch-size")->count() > 0;
    f->seq_given = cmd->get_option("--seq-len")->count() > 0;
    project_plan(*f);
    return project_job(*f);
  };
}

}  // namespace dtbench::cli
