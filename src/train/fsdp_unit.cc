#include "train/fsdp_unit.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "comm/types.h"
#include "compat/storage_compat.h"
#include "core/error.h"
#include "train/grad_buckets.h"
#include "train/wire_cast.h"

namespace dtbench::train {

FsdpUnit::FsdpUnit(int index, const std::string& name, std::vector<std::size_t> params,
                   const std::vector<torch::Tensor>& all, comm::Communicator& comm,
                   trace::TrainObserver& observer, at::ScalarType param_dtype)
    : index_(index), params_(std::move(params)), comm_(comm), observer_(observer),
      param_dtype_(param_dtype) {
  // Where the backend has no reduce_scatter of its own (Gloo: none in 1.13,
  // allreduces of chunks in 2.x) one allreduce and a narrow do it for less.
  reduce_scatter_ = comm_.has_own_reduce_scatter();
  DTBENCH_CHECK(!params_.empty(), "an FSDP unit without parameters");
  for (std::size_t k = 0; k < params_.size(); ++k) {
    const auto& p = all[params_[k]];
    DTBENCH_CHECK(p.scalar_type() == torch::kFloat, "FSDP units hold float32 parameters");
    tensors_.push_back(p);
    offsets_.push_back(numel_);
    slot_of_[params_[k]] = k;
    numel_ += p.numel();
  }
  const int n = comm_.size();
  if (numel_ < n)
    throw UsageError(fmt::format(
        "--reducer fsdp: unit {} ({}) has {} parameter elements, fewer than the {} ranks: every rank "
        "must own part of every unit (use fewer ranks or a larger model)",
        index, name, numel_, n));
  shard_numel_ = (numel_ + n - 1) / n;
  padded_ = shard_numel_ * n;
  torch::NoGradGuard no_grad;
  const auto options = tensors_.front().options().requires_grad(false);
  flat_ = torch::zeros({padded_}, options);
  for (std::size_t k = 0; k < tensors_.size(); ++k) {
    auto& p = tensors_[k];
    auto slot = slot_view(flat_, offsets_[k], p);
    slot.copy_(p.detach());
    p.set_data(slot);
    p.mutable_grad() = torch::Tensor();
  }
  shard_ = flat_.narrow(0, comm_.rank() * shard_numel_, shard_numel_).clone();
  if (param_dtype_ == at::kBFloat16 &&
      !comm_.unsupported_reason(comm::Collective::kAllgather, comm::DType::kBFloat16, comm::ReduceOp::kSum).empty())
    // A gather only moves bytes: where the backend has no bfloat16 all_gather
    // (Gloo in LibTorch 1.13) the same bits go as float16.
    gather_as_ = at::kHalf;
  if (param_dtype_ != at::kFloat) {
    // The module computes with param_dtype views of a param_dtype buffer;
    // the shard above keeps the float32 values the optimizer steps.
    flat_ = flat_.to(param_dtype_);
    for (std::size_t k = 0; k < tensors_.size(); ++k) tensors_[k].set_data(slot_view(flat_, offsets_[k], tensors_[k]));
  }
  reset();
  reshard();
}

void FsdpUnit::gather_async() {
  if (state_ != State::kSharded) return;
  compat::allocate_storage(flat_, static_cast<std::size_t>(padded_) * flat_.element_size());
  observer_.gather_launch(index_, padded_ * static_cast<std::int64_t>(flat_.element_size()));
  if (param_dtype_ != at::kFloat) {
    torch::NoGradGuard no_grad;
    gather_input_ = shard_.to(param_dtype_);
  }
  if (param_dtype_ == at::kFloat) {
    gather_work_ = comm_.allgather(shard_, flat_);
  } else {
    gather_input_ = gather_input_.view(gather_as_);
    gather_output_ = flat_.view(gather_as_);
    gather_work_ = comm_.allgather(gather_input_, gather_output_);
  }
  observer_.gather_returned(index_);
  if (observer_.active())
    gather_work_->on_done([o = &observer_, unit = index_] { o->gather_done(unit); });
  state_ = State::kGathering;
}

void FsdpUnit::wait_gathered() {
  gather_async();
  if (state_ == State::kGathering) {
    const double t0 = trace::clock_us();
    gather_work_->wait(comm_.timeout());
    observer_.waited(t0, trace::clock_us());
    gather_work_.reset();
    gather_input_ = gather_output_ = torch::Tensor();
    state_ = State::kGathered;
  }
}

void FsdpUnit::gather_full_precision() {
  if (param_dtype_ == at::kFloat) return wait_gathered();
  reshard();
  torch::NoGradGuard no_grad;
  auto full = torch::empty({padded_}, shard_.options());
  comm_.allgather(shard_, full)->wait(comm_.timeout());
  flat_ = full;
  for (std::size_t k = 0; k < tensors_.size(); ++k) tensors_[k].set_data(slot_view(flat_, offsets_[k], tensors_[k]));
  param_dtype_ = at::kFloat;
  state_ = State::kGathered;
}

void FsdpUnit::reshard() {
  if (state_ == State::kSharded) return;
  if (state_ == State::kGathering) wait_gathered();
  compat::free_storage(flat_);
  state_ = State::kSharded;
}

bool FsdpUnit::add_gradient(std::size_t param) {
  const std::size_t k = slot_of_.at(param);
  auto& p = tensors_[k];
  const auto& g = p.grad();
  if (!g.defined())
    throw CommError(fmt::format("parameter {} has no gradient after its backward hook", param));
  torch::NoGradGuard no_grad;
  if (!grad_flat_.defined()) grad_flat_ = torch::zeros({padded_}, shard_.options());
  slot_view(grad_flat_, offsets_[k], p).copy_(g);
  p.mutable_grad() = torch::Tensor();  // only the shard's gradient is kept
  DTBENCH_CHECK(pending_ > 0, "gradient of one parameter reported twice in one backward");
  return --pending_ == 0;
}

void FsdpUnit::launch_reduce(int bucket) {
  // What really goes on the wire (FSDP2's reduce_dtype: the float32 of the
  // shard, whatever --param-dtype): the test of the bf16 policy reads it.
  observer_.collective_launch(bucket, grad_flat_.numel() * static_cast<int64_t>(grad_flat_.element_size()),
                              wire_dtype_of(grad_flat_), params_);
  if (reduce_scatter_) {
    received_ = torch::empty({shard_numel_}, grad_flat_.options());
    reduce_work_ = comm_.reduce_scatter(grad_flat_, received_, comm::ReduceOp::kSum);
  } else {
    reduce_work_ = comm_.allreduce(grad_flat_, grad_flat_, comm::ReduceOp::kSum);
  }
  observer_.collective_returned(bucket);
  if (observer_.active())
    reduce_work_->on_done([o = &observer_, bucket] { o->collective_done(bucket); });
}

void FsdpUnit::finish_reduce() {
  if (!reduce_work_) return;  // finished already
  const double t0 = trace::clock_us();
  reduce_work_->wait(comm_.timeout());
  observer_.waited(t0, trace::clock_us());
  reduce_work_.reset();
  torch::NoGradGuard no_grad;
  // The reduce-scatter's output becomes the shard's gradient (a new tensor
  // each backward, dropped again by zero_grad(), as FSDP2's sharded grads
  // under zero_grad(set_to_none=True)).
  auto grad = reduce_scatter_ ? received_ : grad_flat_.narrow(0, comm_.rank() * shard_numel_, shard_numel_).clone();
  grad.div_(static_cast<double>(comm_.size()));
  shard_.mutable_grad() = grad;
  received_ = torch::Tensor();
  grad_flat_ = torch::Tensor();
}

void FsdpUnit::zero_grad() { shard_.mutable_grad() = torch::Tensor(); }

}  // namespace dtbench::train
