#pragma once
// The iteration of `horovod` at N ranks, for `dtbench project`, as `dtbench
// ddp --reducer horovod` runs Horovod's background loop
// (src/train/strategy_horovod.cc): every cycle time the loop takes the
// gradients ready by then, agrees on them with the other ranks (one small
// allreduce: the response cache's bits), fuses them in ready order up to the
// fusion threshold and allreduces each fused group in turn; the next cycle
// starts a cycle time after this one started, or when its work is done. The
// optimizer step waits for every gradient; p.fixed_s is added (the
// strategy's own per-iteration cost). The cycles are taken as aligned
// with backward's start. Pure; torch-free.
#include <functional>
#include <vector>

#include "project/horovod_options.h"
#include "project/schedule.h"
#include "project/sharded_time.h"

namespace dtbench::project {

// `items`: each gradient's bytes and ready time after backward starts (any
// order); `allreduce(bytes)`: one allreduce's seconds; `negotiate_s`: one
// cycle's agreement. collectives counts the fused allreduces.
StrategyTime horovod_time(const ComputeProfile& p, std::vector<GradItem> items,
                          const std::function<double(double)>& allreduce, double negotiate_s,
                          const HorovodOptions& o);

}  // namespace dtbench::project
