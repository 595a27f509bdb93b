#pragma once
// Gradient synchronisation strategies (--reducer). The trainer calls the
// hooks in this order each iteration:
//   before_forward()       buffers broadcast, bucket rebuilds
//   forward, loss
//   before_backward(loss)  arm the reducer for this backward
//   loss.backward()        overlap/ddp reduce buckets while this runs
//   finish_backward()      wait for what is still in flight ("exposed
//                          communication"), write averaged gradients
//   optimizer step
// One file per strategy: reducer_factory.cc (none), reducer_ddp.cc
// (c10d::Reducer), reducer_overlap.cc, reducer_sync.cc (sync and
// allreduce-after-backward).
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

namespace dtbench::train {

class GradReducer {
 public:
  virtual ~GradReducer() = default;
  virtual std::string name() const = 0;
  virtual void before_forward() {}
  virtual void before_backward(const torch::Tensor& loss) {}
  virtual void finish_backward() {}
  // Buckets used (parameter count per bucket, in launch order); empty for none.
  virtual std::vector<std::vector<size_t>> buckets() const { return {}; }
  // Compression error probe (see GradBuckets::set_probe); no-ops for
  // reducers that do not compress.
  virtual void set_compression_probe(bool) {}
  virtual CompressionStats compression_stats() const { return {}; }
  // True when the parameters' .grad are views into the reducer's buckets
  // (overlap, sync: like DDP's gradient_as_bucket_view): the optimizer must
  // zero them in place. Otherwise it sets them to None (undefined), as
  // PyTorch 2.x's optimizer.zero_grad() does: backward then stores the
  // fresh gradient instead of zeroing and adding to the old one.
  virtual bool grads_are_bucket_views() const { return false; }
};

// Creates the reducer named by opts.reducer for `module`. Broadcasts the
// initial parameters and buffers from rank 0 first (all but `none`).
// `comm` may be null only for `none`. Throws UsageError when the backend
// cannot serve the reducer (ddp needs a c10d process group). The reducer
// reports its buffer broadcasts, bucket launches, completions and casts to
// `observer` (--trace; it must outlive the reducer).
std::unique_ptr<GradReducer> make_reducer(const TrainOptions& opts, torch::nn::Module& module,
                                          comm::Communicator* comm,
                                          trace::TrainObserver& observer = trace::null_observer());

}  // namespace dtbench::train
