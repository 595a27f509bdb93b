#include "train/fsdp_unit.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "comm/types.h"
#include "compat/storage_compat.h"
#include "core/error.h"
#include "train/grad_buckets.h"

namespace dtbench::train {

FsdpUnit::FsdpUnit(int index, const std::string& name, std::vector<std::size_t> params,
                   const std::vector<torch::Tensor>& all, comm::Communicator& comm,
                   trace::TrainObserver& observer)
    : params_(std::move(params)), comm_(comm), observer_(observer) {
  reduce_scatter_ = comm_.unsupported_reason(comm::Collective::kReduceScatter, comm::DType::kFloat32,
                                             comm::ReduceOp::kSum)
                        .empty();
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
  grad_shard_ = torch::zeros({shard_numel_}, options);
  shard_.mutable_grad() = grad_shard_;
  reset();
  reshard();
}

void FsdpUnit::gather_async() {
  if (state_ != State::kSharded) return;
  compat::allocate_storage(flat_, static_cast<std::size_t>(padded_) * flat_.element_size());
  gather_work_ = comm_.allgather(shard_, flat_);
  state_ = State::kGathering;
}

void FsdpUnit::wait_gathered() {
  gather_async();
  if (state_ == State::kGathering) {
    gather_work_->wait(comm_.timeout());
    gather_work_.reset();
    state_ = State::kGathered;
  }
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
  observer_.collective_launch(bucket, padded_ * 4, trace::WireDType::kFloat32, params_);
  if (reduce_scatter_) {
    received_ = torch::empty({shard_numel_}, grad_flat_.options());
    reduce_work_ = comm_.reduce_scatter(grad_flat_, received_, comm::ReduceOp::kSum);
  } else {
    reduce_work_ = comm_.allreduce(grad_flat_, grad_flat_, comm::ReduceOp::kSum);
  }
  if (observer_.active())
    reduce_work_->on_done([o = &observer_, bucket] { o->collective_done(bucket); });
}

void FsdpUnit::finish_reduce() {
  if (!reduce_work_) return;  // finished already
  reduce_work_->wait(comm_.timeout());
  reduce_work_.reset();
  torch::NoGradGuard no_grad;
  if (reduce_scatter_)
    grad_shard_.copy_(received_);
  else
    grad_shard_.copy_(grad_flat_.narrow(0, comm_.rank() * shard_numel_, shard_numel_));
  grad_shard_.div_(static_cast<double>(comm_.size()));
  received_ = torch::Tensor();
  grad_flat_ = torch::Tensor();
}

void FsdpUnit::zero_grad() {
  torch::NoGradGuard no_grad;
  grad_shard_.zero_();
}

}  // namespace dtbench::train
