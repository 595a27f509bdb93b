#pragma once
// `dtbench project`: iteration time, exposed communication, throughput,
// scaling efficiency and memory per rank at rank counts nobody measured,
// from a compute profile of one rank and a network model, for each
// strategy (sharding.h). DDP: iteration(N) = forward + max(backward, last
// bucket's allreduce done) + optimizer + the fixed per-iteration cost DDP
// adds at one rank (docs/metrics.md "Projection"); the sharded ones:
// sharded_time.h; memory: memory_model.h. Pure; torch-free.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "project/collective_model.h"
#include "project/memory_model.h"
#include "project/schedule.h"
#include "project/sharding.h"

namespace dtbench::project {

// What one rank does per iteration, measured (a ddp report) or stated.
struct ComputeProfile {
  std::string source;             // the report's path, or "command line"
  std::string model;              // e.g. resnet50
  std::int64_t batch_per_rank = 0;
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
  // Measured iteration p50 per world size in the same report (validation), empty if none.
  std::vector<std::pair<int, double>> measured;
};

struct ProjectOptions {
  Sharding strategy = Sharding::kDdp;
  MemoryOptions memory;           // optimizer states, fsdp's parameter dtype and resharding
  double memory_limit = 0;        // bytes per rank (--memory-per-rank); 0: not asked
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
  double examples_per_s = 0;  // whole job: world x batch / iteration
  double efficiency = 0;      // iteration(1) / iteration(N): weak scaling, 1 = perfect
  std::string algo;           // ring or tree for the largest bucket
  double largest_bucket_bytes = 0;
  std::optional<double> measured_s;  // the profile report's own p50 at this world size
  int collectives = 0;        // collectives per iteration (sharded strategies; DDP: buckets)
  MemoryFigures memory;       // per rank (activations 0 when not known)
  bool activations_known = false;
  std::optional<bool> fits;             // total <= memory_limit, when a limit is given
  std::int64_t largest_batch = -1;      // per rank within memory_limit (-1: no limit or no activation figure)
};

// The buckets the projection uses for `profile` under `opts`.
std::vector<Bucket> projection_buckets(const ComputeProfile& profile, const ProjectOptions& opts);

// One row per opts.world_sizes entry, in order, for opts.strategy. Throws
// UsageError for an empty profile (no gradient bytes), a world size below 1,
// contention without the profile's threads or a used level's cpu_util, and
// what a sharded strategy cannot take (contention, compression, fsdp
// without units).
std::vector<ProjectionRow> project(const ComputeProfile& profile, const ProjectOptions& opts);

}  // namespace dtbench::project
