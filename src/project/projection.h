#pragma once
// `dtbench project`: iteration time, exposed communication, throughput,
// scaling efficiency and memory per rank at rank counts nobody measured,
// from a compute profile of one rank and a network model, for each
// strategy (strategies.h). DDP: iteration(N) = forward + max(backward, last
// bucket's allreduce done) + optimizer + the fixed per-iteration cost DDP
// adds at one rank (docs/metrics.md "Projection"); the sharded ones:
// sharded_time.h; memory: memory_model.h. Pure; torch-free.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "project/collective_model.h"
#include "project/horovod_options.h"
#include "project/layout_model.h"
#include "project/memory_model.h"
#include "project/schedule.h"
#include "project/strategies.h"

namespace dtbench::project {

// A measured row of a ddp report beside the projection: its reducer, rank
// count, iteration p50 and peak tensor bytes per rank (-1: not recorded).
struct MeasuredRow {
  std::string reducer;
  int world_size = 0;
  double seconds = 0;
  double peak_bytes = -1;
  std::int64_t batch_per_rank = 0, tokens_per_example = 0;  // the shape it ran (0: not known)
  int tp = 1;  // its tensor-parallel degree (set beside a layout's projection of the same tp only)
  std::string recompute = "none";  // its --activation-checkpointing
  std::string amp = "none";        // its --amp
  // Its pipeline (--pp, extras.layout.pipeline): set beside a layout's
  // projection of the same degree, schedule, microbatches and chunks only.
  int pp = 1;
  std::string pp_schedule = "";  // "" without a pipeline
  int microbatches = 0, stages_per_rank = 1;
};

// Whether a measured row of `reducer` is a run of strategy `s`: horovod and
// the sharded ones by name; ddp any other replicated reducer (ddp, overlap,
// sync, allreduce-after-backward).
bool measured_as(Strategy s, const std::string& reducer);

// What one rank does per iteration, measured (a ddp report) or stated.
struct ComputeProfile {
  std::string source;             // the report's path, or "command line"
  std::string model;              // e.g. resnet50
  std::int64_t batch_per_rank = 0;
  std::int64_t tokens_per_example = 0;  // token models: the sequence length (0: not a token model)
  int threads = 0;                // intra-op threads per rank it ran with (0: not known)
  double forward_s = 0;           // forward + loss
  double backward_s = 0;          // backward's compute, no communication
  double optimizer_s = 0;         // optimizer step + zero_grad
  double fixed_s = 0;             // DDP's own cost per iteration at 1 rank (1-rank DDP - no ddp)
  std::vector<GradItem> grads;    // gradient bytes and ready times, in ready order
  // true: `grads` are the measured buckets (used as they are unless
  // re-bucketed); false: per-layer items, bucketed with the options' caps.
  bool grads_are_buckets = false;
  BucketOptions buckets;          // the caps the profile ran with (or DDP's defaults)
  // FSDP units in forward order, units[0] the root (empty: not known, fsdp
  // cannot be projected).
  std::vector<UnitWork> units;
  double parameters = 0;          // Ψ, elements (0: the gradient bytes / 4)
  double activation_bytes = -1;   // one rank's activations at batch_per_rank (< 0: not known)
  double baseline_s = 0;          // the "no ddp" row's iteration p50 (0: not known)
  // 1-rank rows of any strategy (the profile report's and --measured's):
  // each strategy's own fixed cost (its p50 - baseline_s) and, where its
  // peak was recorded, what it holds beyond the memory formula.
  std::vector<MeasuredRow> one_rank;
  // Measured rows of more than one rank, the report's own and --measured's (validation).
  std::vector<MeasuredRow> measured;
  // Set when a report's profile was moved to another batch or sequence
  // length (profile.h rescale_profile): the shape it was measured at and the
  // factors applied.
  struct Rescaled {
    std::int64_t batch_per_rank = 0, tokens_per_example = 0;  // as measured
    double compute = 1;          // forward, backward and ready marks multiplied by this
    double linear = 1;           // activations growing with the tokens: B'T' / BT
    double quadratic = 1;        // the attention probabilities: (B'/B)(T'/T)^2
    double quadratic_bytes = 0;  // their part of the measured activations
    double activation_bytes = -1;  // the profile's activations as measured (< 0: not known)
  };
  std::optional<Rescaled> rescaled;
  // What activation_bytes was measured in (a report: 4 or 2 bytes an
  // element by its --amp, dtbench's eager attention, its
  // --activation-checkpointing); 0: a stated figure, read in the precision
  // and attention kernel the projection is asked for, without recomputation.
  double activation_element_bytes = 0;
  // A report's optimizer states per parameter (AdamW 2, SGD with momentum
  // 1, without 0); -1: not known (--optimizer says).
  int optimizer_states = -1;
  std::string activations_recompute = "none";
  // The decoder's shape where the model has one (gpt2, llama families): what
  // a layout (tensor, pipeline, sequence parallelism, recomputation) needs.
  std::optional<DecoderShape> decoder;
  // Activations measured at the report's shape, at this profile's: the part
  // growing with the tokens times `linear`, the attention's times `quadratic`.
  double scale_activations(double measured) const;
  // A strategy's activations from its 1-rank row at the report's shape (its
  // peak less its formula: the activations and what its peak holds beyond
  // the formula), at this profile's: plus what the profile's own activations
  // grow by (the rest does not grow with the batch or length); scaled as
  // they would be where the profile has none.
  double rescale_calibrated(double measured) const;
};

struct ProjectOptions {
  Strategy strategy = Strategy::kDdp;
  // Optimizer states, fsdp's parameter dtype and resharding; bucket_cap_bytes
  // 0 (the default here): the buckets' cap (the profile's, or --bucket-cap-mb).
  MemoryOptions memory = [] {
    MemoryOptions m;
    m.bucket_cap_bytes = 0;
    return m;
  }();
  double memory_limit = 0;        // bytes per rank (--memory-per-rank); 0: not asked
  // zero1/zero2/fsdp: the gradients' reduce_scatter run as an allreduce (a
  // backend without one of its own: Gloo, where dtbench ddp then does).
  bool reduce_scatter_as_allreduce = false;
  HorovodOptions horovod;         // horovod: cycle time and fusion threshold
  Network net;
  Algo algo = Algo::kAuto;
  std::vector<int> world_sizes{1, 2, 4, 8};
  std::optional<BucketOptions> rebucket;  // what-if bucket caps; unset: the profile's buckets
  double wire_ratio = 1.0;                // bytes on the wire / gradient bytes (fp16/bf16 compression: 0.5)
  bool overlap = true;                    // false: every allreduce after backward
  // CPU contention (ScheduleOptions): the cores of a node, shared by its
  // ranks' compute threads (the profile's threads) and the cores their
  // collectives keep busy (the level's cpu_util). 0: off (GPUs, or cores
  // to spare).
  double cores_per_node = 0;
  // The model-parallel layout around the strategy (layout_model.h): the
  // strategy runs on each data-parallel group of world / (tp · pp) ranks.
  LayoutOptions layout;
};

struct ProjectionRow {
  std::string strategy;       // ddp, zero1, zero2, fsdp
  int world_size = 1;
  int nodes = 1;
  int buckets = 0;
  double comm_s = 0;          // sum of the allreduces' times
  double exposed_s = 0;       // communication left after backward
  double iteration_s = 0;
  double contention_s = 0;    // what CPU contention added (0 when off)
  double fixed_s = 0;         // the strategy's own per-iteration cost used
  std::string fixed_from;     // "profile" (DDP's: 1-rank DDP - no ddp), "1-rank <reducer> row", "none"
  std::string activations_from;  // "profile", "1-rank <reducer> row", "not known"
  double examples_per_s = 0;  // whole job: world x batch / iteration
  double tokens_per_s_per_rank = 0;  // token models: batch x tokens per example / iteration (0: not one)
  double efficiency = 0;      // iteration(1) / iteration(N): weak scaling, 1 = perfect
  std::string algo;           // ring or tree for the largest bucket
  double largest_bucket_bytes = 0;
  std::optional<double> measured_s;  // a measured p50 of this strategy at this world size
  std::optional<double> measured_peak_bytes;  // that row's peak tensor bytes per rank
  int collectives = 0;        // collectives per iteration (sharded strategies; DDP: buckets)
  MemoryFigures memory;       // per rank (activations 0 when not known)
  bool activations_known = false;
  std::optional<bool> fits;             // total <= memory_limit, when a limit is given
  std::int64_t largest_batch = -1;      // per rank within memory_limit (-1: no limit or no activation figure)
  // The layout (tp 1, pp 1, dp = world_size without one).
  int dp = 1, tp = 1, pp = 1, cp = 1;
  double bubble_s = 0;     // the pipeline's idle time per iteration
  double tp_comm_s = 0;    // tensor parallelism's collectives per iteration (exposed: not overlapped)
  double pp_comm_s = 0;    // the stage's sends and receives per iteration (on the critical path)
  double recompute_s = 0;  // activation recomputation's extra forward per iteration
  double cp_comm_s = 0;    // context parallelism's key/value passes the attention core did not cover
  // Each pipeline stage's figures (one entry without a pipeline): its
  // blocks, the parameter elements a rank of it holds, the microbatches in
  // flight at its peak and its memory per rank; `memory` is the largest.
  struct Stage {
    int blocks = 0;
    double parameters = 0;
    double in_flight = 1;
    MemoryFigures memory;
  };
  std::vector<Stage> stages;
};

// The buckets the projection uses for `profile` under `opts`.
std::vector<Bucket> projection_buckets(const ComputeProfile& profile, const ProjectOptions& opts);

// One row per opts.world_sizes entry, in order, for opts.strategy on its
// layout (layout_projection.cc): the data-parallel strategy on a group of
// world / (tp · pp) ranks holding one stage's share of the model, plus the
// layout's own time (the pipeline's bubble, TP's collectives, the stages'
// transfers, recomputation) and memory (Korthikanti's activations). Throws
// UsageError for a layout the world sizes or the model cannot take
// (check_layout), and what project_data_parallel refuses.
std::vector<ProjectionRow> project(const ComputeProfile& profile, const ProjectOptions& opts);

// One row per opts.world_sizes entry, in order, for opts.strategy on
// replicas of the whole model (opts.layout unused). Throws
// UsageError for an empty profile (no gradient bytes), a world size below 1,
// contention without the profile's threads or a used level's cpu_util, and
// what a sharded strategy cannot take (contention, compression, fsdp
// without units).
std::vector<ProjectionRow> project_data_parallel(const ComputeProfile& profile, const ProjectOptions& opts);

}  // namespace dtbench::project
