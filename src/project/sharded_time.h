#pragma once
// The iteration of the sharded strategies at N ranks, for `dtbench project`
// (docs/metrics.md "Projection: sharded strategies"), as `dtbench ddp
// --reducer zero1|zero2|fsdp` runs them, every collective on one channel in
// the order it is issued (one process group; on a GPU FSDP2 puts gathers and
// reductions on two streams, which then share the same links); p.fixed_s is
// the strategy's own per-iteration cost (its 1-rank run less one process's):
//  - zero1: backward, then each bucket's reduce_scatter, the optimizer on
//    this rank's shard (optimizer time / N), each bucket's all_gather;
//  - zero2: each bucket's reduce_scatter launched when it is ready,
//    overlapping backward (schedule.h), then the sharded step and the
//    all_gathers;
//  - fsdp: units[0] is the root (gathered first, its compute, the head, at
//    the end of forward and the start of backward, reduced last); every
//    other unit is all_gathered before its forward (the next one's gather
//    issued when a unit starts: prefetch), again before its backward when
//    resharded after forward (prefetching the one before), and its
//    gradients reduce_scattered when its backward ends; then the sharded step.
// Pure; torch-free.
#include <functional>
#include <vector>

#include "project/projection.h"

namespace dtbench::project {

struct StrategyTime {
  double comm_s = 0;       // sum of the collectives' times
  double exposed_s = 0;    // iteration time beyond compute (forward + backward + step)
  double iteration_s = 0;
  int collectives = 0;     // issued per iteration
};

// `gather(bytes)` / `reduce(bytes)`: seconds of one all_gather / one
// reduce_scatter of `bytes` (the whole tensor's) at this world size.
StrategyTime zero_time(Strategy stage, const ComputeProfile& p, const std::vector<Bucket>& buckets,
                       const std::function<double(double)>& gather, const std::function<double(double)>& reduce,
                       int world, bool overlap);

// `gather_bytes` / `reduce_bytes`: bytes per parameter element gathered (the
// parameter dtype) and reduce-scattered (the reduce dtype).
StrategyTime fsdp_time(const ComputeProfile& p, const std::vector<UnitWork>& units,
                       const std::function<double(double)>& gather, const std::function<double(double)>& reduce,
                       int world, bool reshard_after_forward, double gather_bytes, double reduce_bytes);

}  // namespace dtbench::project
