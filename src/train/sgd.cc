#include "train/sgd.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

namespace dtbench::train {

Sgd::Sgd(std::vector<torch::Tensor> params, double lr, double momentum, double weight_decay)
    : Optimizer(std::move(params)), buffers_(params_.size()), lr_(lr), momentum_(momentum),
      weight_decay_(weight_decay) {}

void Sgd::step() {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> params, grads;
  std::vector<std::size_t> index;  // params_[index[j]] is params[j]
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const auto& g = params_[i].grad();
    if (!g.defined()) continue;
    params.push_back(params_[i]);
    grads.push_back(g);
    index.push_back(i);
  }
  if (params.empty()) return;
  // Coupled weight decay, into the gradients in place: the same rounding as
  // torch.optim.SGD's out-of-place _foreach_add, without a second copy of
  // every gradient at the step (that copy moved small models' peak from the
  // backward to the step). Nothing reads the gradients before zero_grad.
  if (weight_decay_ != 0) at::_foreach_add_(grads, params, weight_decay_);
  if (momentum_ == 0) {
    at::_foreach_add_(params, grads, -lr_);
    return;
  }
  std::vector<at::Tensor> bufs, bufs_grads, steps;
  for (std::size_t j = 0; j < params.size(); ++j) {
    auto& b = buffers_[index[j]];
    if (!b.defined()) {
      b = grads[j].detach().clone();
    } else {
      bufs.push_back(b);
      bufs_grads.push_back(grads[j]);
    }
    steps.push_back(b);
  }
  if (!bufs.empty()) {
    at::_foreach_mul_(bufs, momentum_);
    at::_foreach_add_(bufs, bufs_grads, 1.0);
  }
  at::_foreach_add_(params, steps, -lr_);
}

std::int64_t Sgd::state_bytes() const {
  std::int64_t n = 0;
  for (const auto& b : buffers_)
    if (b.defined()) n += b.numel() * static_cast<std::int64_t>(b.element_size());
  return n;
}

}  // namespace dtbench::train
