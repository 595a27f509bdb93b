#pragma once
// The gradient buckets of one iteration and their allreduces on the
// communication channel, for `dtbench project`. Buckets are formed as
// c10d's Reducer forms them (in the order gradients become ready, the first
// closed at the first-bucket cap, the others at the bucket cap), each
// launched when its last gradient is ready (or when backward ends, without
// overlap) and serialised behind the one before it, as the backends run
// them. Pure; torch-free.
#include <functional>
#include <vector>

namespace dtbench::project {

// A run of gradient bytes that becomes ready at one time (a layer's weights,
// or a measured bucket).
struct GradItem {
  double bytes = 0;
  double ready_s = 0;  // seconds after backward starts
};

// One FSDP unit: the parameter elements gathered and reduce-scattered as
// one, and its share of the forward's (and backward's) compute.
struct UnitWork {
  double param_elements = 0;
  double compute_share = 0;
};

struct Bucket {
  double bytes = 0;
  double ready_s = 0;  // when its last gradient is ready
};

struct BucketOptions {
  double first_cap_bytes = 1024.0 * 1024;  // PyTorch DDP: 1 MiB
  double cap_bytes = 25.0 * 1024 * 1024;   // PyTorch DDP: 25 MiB
};

// Items in ready order (sorted here, stable) gathered into buckets: a bucket
// closes once it holds at least its cap; the last one holds what is left.
std::vector<Bucket> make_buckets(std::vector<GradItem> items, const BucketOptions& opts);

// Items cut into pieces of at most `piece_bytes`, each ready at the time
// linearly interpolated between the previous item's ready time and its own
// (how a measured bucket's gradients arrive, for re-bucketing).
std::vector<GradItem> split_items(const std::vector<GradItem>& items, double piece_bytes);

struct ScheduleOptions {
  double backward_s = 0;  // backward compute time; buckets launch no earlier without overlap
  bool overlap = true;    // launch each bucket when ready (false: all after backward)
  // CPU contention (docs/metrics.md "Projection"), off while node_cores is
  // 0: a node's cores shared by its ranks' compute threads and the cores
  // their collective keeps busy. While the demand exceeds node_cores, every
  // thread runs at node_cores / demand of its speed (processor sharing), so
  // backward stretches while a bucket's allreduce runs and the allreduce
  // slows with it. Speeds are relative to how each was measured: backward
  // alone at `profiled_cores` (one rank's threads), a collective alone.
  double node_cores = 0;
  double compute_cores = 0;   // what the node's ranks' backward asks for (ranks x threads)
  double profiled_cores = 0;  // what the profiled rank's backward asked for (its threads)
  std::function<double(double)> comm_cores;  // bucket bytes -> cores the node's ranks' collective asks for
};

struct Schedule {
  std::vector<double> start_s, done_s;  // per bucket, from backward start
  double comm_s = 0;                    // sum of the collectives' times (uncontended)
  double last_done_s = 0;               // when the last collective ends (0 without buckets)
  double backward_end_s = 0;            // when backward's compute ends: backward_s unless contended
  // Communication left after backward: max(0, last_done_s - backward_end_s).
  double exposed_s = 0;
};

// Compute's speed relative to the profiled rank's when the node asks for
// `demand` cores (1 without contention options).
double compute_speed(const ScheduleOptions& opts, double demand);

// `cost(bytes)` is the seconds of one bucket's allreduce on its own. Buckets
// are ready at `ready_s` of backward's progress (seconds of uncontended
// compute), which is wall time only without contention.
Schedule run_schedule(const std::vector<Bucket>& buckets, const std::function<double(double)>& cost,
                      const ScheduleOptions& opts);

}  // namespace dtbench::project
