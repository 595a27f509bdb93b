#pragma once
// The data-parallel strategy (--reducer): what each rank holds of the
// parameters, gradients and optimizer state, and how they are kept in step.
// Replicated strategies (none, ddp, overlap, sync, allreduce-after-backward)
// hold everything and only average gradients; sharded ones (zero1, zero2, fsdp)
// own where parameters and gradients live and which optimizer state a rank
// steps. The trainer asks the strategy, each iteration:
//   before_forward()       buffers broadcast, bucket rebuilds
//   forward, loss
//   before_backward(loss)  arm the strategy for this backward
//   loss.backward()        overlap/ddp/zero2 reduce buckets while this runs
//   finish_backward()      wait for what is still in flight ("exposed
//                          communication"): averaged gradients (or this
//                          rank's averaged shard) where the optimizer reads them
//   step(optimizer)        the optimizer over optimizer_parameters(); sharded
//                          strategies then all-gather the updated parameters
//   zero_grad(optimizer)   gradients zeroed in place or dropped
// One file per strategy: strategy_factory.cc (none), strategy_ddp.cc
// (c10d::Reducer), strategy_overlap.cc, strategy_sync.cc (sync and
// allreduce-after-backward), strategy_zero1.cc, strategy_zero2.cc,
// strategy_fsdp.cc (ZeRO-3: parameters sharded per unit, models/units.h).
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "train/compression.h"
#include "train/train_options.h"
#include "trace/observer.h"

namespace dtbench::comm {
class Communicator;
}
namespace dtbench::models {
class UnitSeam;
}

namespace dtbench::train {

class Optimizer;

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  virtual void before_forward() {}
  virtual void before_backward(const torch::Tensor& loss) {}
  virtual void finish_backward() {}
  // The tensors the optimizer steps, each with its gradient after
  // finish_backward(): the module's parameters (replicated), or this rank's
  // shards of the flat parameter buckets (sharded).
  virtual std::vector<torch::Tensor> optimizer_parameters() const { return params_; }
  // Steps `optimizer` (made over optimizer_parameters()).
  virtual void step(Optimizer& optimizer);
  // Zeroes the gradients in place where they are views of the strategy's
  // buckets, else drops them (set to None, as PyTorch 2.x's zero_grad()).
  virtual void zero_grad(Optimizer& optimizer);
  // After the last iteration: leaves the module's full parameters in place
  // (fsdp frees them between uses), for the replica check and the caller.
  virtual void finish() {}
  // After finish(): the broadcast of rank 0's buffers (batch-norm running
  // statistics) that the next iteration's before_forward() would make,
  // untimed and untraced, so that the replica check can compare buffers
  // too. Returns whether this strategy keeps buffers in step (it broadcasts
  // them, and the module has some); false leaves them as they are (none,
  // --no-broadcast-buffers: each rank's own statistics).
  virtual bool sync_buffers() { return false; }
  // Buckets used (parameter count per bucket, in launch order); empty for none.
  virtual std::vector<std::vector<size_t>> buckets() const { return {}; }
  // Compression error probe (see GradBuckets::set_probe); no-ops for
  // strategies that do not compress.
  virtual void set_compression_probe(bool) {}
  virtual CompressionStats compression_stats() const { return {}; }
  // True when the parameters' .grad are views into the strategy's buckets
  // (overlap, sync, zero1: like DDP's gradient_as_bucket_view): they are
  // zeroed in place. Otherwise they are set to None (undefined).
  virtual bool grads_are_bucket_views() const { return false; }

 protected:
  explicit Strategy(std::vector<torch::Tensor> params) : params_(std::move(params)) {}
  std::vector<torch::Tensor> params_;  // the module's parameters
};

// Creates the strategy named by opts.reducer for `module`. Broadcasts the
// initial parameters and buffers from rank 0 first (all but `none`).
// `comm` may be null only for `none`. Throws UsageError when the backend
// cannot serve the strategy (ddp needs a c10d process group). The strategy
// reports its buffer broadcasts, bucket launches, completions and casts to
// `observer` (--trace; it must outlive the strategy). `units`: the model's
// FSDP units (fsdp; null: the whole model is one unit); the strategy hooks
// itself into them while it lives.
std::unique_ptr<Strategy> make_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                        comm::Communicator* comm,
                                        trace::TrainObserver& observer = trace::null_observer(),
                                        models::UnitSeam* units = nullptr);

}  // namespace dtbench::train
