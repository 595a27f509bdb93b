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
};

struct Schedule {
  std::vector<double> start_s, done_s;  // per bucket, from backward start
  double comm_s = 0;                    // sum of the collectives' times
  double last_done_s = 0;               // when the last collective ends (0 without buckets)
  // Communication left after backward: max(0, last_done_s - backward_s).
  double exposed_s = 0;
};

// `cost(bytes)` is the seconds of one bucket's allreduce.
Schedule run_schedule(const std::vector<Bucket>& buckets, const std::function<double(double)>& cost,
                      const ScheduleOptions& opts);

}  // namespace dtbench::project
