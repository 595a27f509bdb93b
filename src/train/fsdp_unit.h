#pragma once
// One FSDP unit (strategy_fsdp.cc): the parameters of one block as a flat
// float32 buffer, padded to a multiple of the world size, of which this rank
// owns one shard. The module's parameters are views of the flat buffer; its
// storage is freed while the unit is sharded and re-allocated and filled by
// an all-gather of every rank's shard when the unit is about to run (FSDP's
// unshard/reshard). Gradients: each parameter's is copied into a flat
// gradient buffer the moment autograd produced it and dropped; the full
// buffer is reduce-scattered into this rank's gradient shard (allreduced and
// the shard taken where the backend has no reduce_scatter of its own:
// Gloo's) and freed.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <torch/types.h>

#include "comm/communicator.h"
#include "trace/observer.h"

namespace dtbench::train {

class FsdpUnit {
 public:
  // `params`: the unit's parameters (indices into `all`, the module's).
  // `param_dtype`: dtype of the gathered parameters (FSDP2's
  // MixedPrecisionPolicy param_dtype): float32, or bfloat16 (the float32
  // shard is cast and gathered at half the bytes, the module's parameters
  // become bfloat16 views; their gradients are accumulated into the float32
  // flat gradient, so the reduction stays float32).
  // Throws UsageError when the unit has fewer elements than ranks.
  FsdpUnit(int index, const std::string& name, std::vector<std::size_t> params,
           const std::vector<torch::Tensor>& all, comm::Communicator& comm,
           trace::TrainObserver& observer, at::ScalarType param_dtype = at::kFloat);

  // This rank's parameters, the tensor the optimizer steps; its .grad is the
  // averaged gradient shard after finish_reduce(), undefined after zero_grad().
  const torch::Tensor& shard() const { return shard_; }
  const std::vector<std::size_t>& params() const { return params_; }
  std::int64_t padding() const { return padded_ - numel_; }

  // Starts gathering the full parameters (no-op when gathered or gathering).
  void gather_async();
  // Returns once the full parameters are in place (gathering if needed).
  void wait_gathered();
  // Frees the full parameters (waits a gather still in flight first).
  void reshard();
  // After training: the full parameters gathered in float32, the module's
  // parameters float32 views of them again (for the replica check and the
  // caller). Same as wait_gathered() for float32 units.
  void gather_full_precision();
  bool gathered() const { return state_ != State::kSharded; }

  // Parameter `param`'s gradient is ready; true when that completes the unit.
  bool add_gradient(std::size_t param);
  std::size_t pending() const { return pending_; }
  // Starts the reduce-scatter of the unit's gradients, reported to the
  // observer as bucket `bucket` (its place in this backward's launch order).
  void launch_reduce(int bucket);
  bool reduce_launched() const { return static_cast<bool>(reduce_work_); }
  // Waits for it and leaves the average of this rank's shard in shard().grad()
  // (no-op when finished already).
  void finish_reduce();
  void reset() { pending_ = params_.size(); }
  // Drops the gradient shard (PyTorch 2.x's zero_grad(set_to_none=True)).
  void zero_grad();

 private:
  enum class State { kSharded, kGathering, kGathered };
  int index_;  // the unit's number in the trace (the root last)
  std::vector<std::size_t> params_;
  std::vector<torch::Tensor> tensors_;  // the module's parameters of this unit
  std::vector<std::int64_t> offsets_;
  std::unordered_map<std::size_t, std::size_t> slot_of_;
  std::int64_t numel_ = 0, padded_ = 0, shard_numel_ = 0;
  torch::Tensor flat_;   // full parameters (param_dtype_); storage freed while sharded
  // While a gather is in flight: the shard cast to param_dtype_, and flat_,
  // both as gather_as_.
  torch::Tensor gather_input_, gather_output_;
  torch::Tensor shard_;  // this rank's parameters (own storage)
  torch::Tensor grad_flat_, received_;
  comm::WorkPtr gather_work_, reduce_work_;
  State state_ = State::kGathered;
  std::size_t pending_ = 0;
  comm::Communicator& comm_;
  trace::TrainObserver& observer_;
  bool reduce_scatter_ = true;
  at::ScalarType param_dtype_ = at::kFloat;
  at::ScalarType gather_as_ = at::kBFloat16;  // the dtype the gather's bytes travel as
};

}  // namespace dtbench::train
