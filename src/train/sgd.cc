#include "train/sgd.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

namespace dtbench::train {

Sgd::Sgd(std::vector<torch::Tensor> params, double lr, double momentum)
    : Optimizer(std::move(params)), buffers_(params_.size()), lr_(lr), momentum_(momentum) {}

void Sgd::step() {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> params, grads, bufs, bufs_grads;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const auto& g = params_[i].grad();
    if (!g.defined()) continue;
    params.push_back(params_[i]);
    grads.push_back(g);
    if (momentum_ == 0) continue;
    if (!buffers_[i].defined()) {
      buffers_[i] = g.detach().clone();
    } else {
      bufs.push_back(buffers_[i]);
      bufs_grads.push_back(g);
    }
  }
  if (params.empty()) return;
  if (momentum_ == 0) {
    at::_foreach_add_(params, grads, -lr_);
    return;
  }
  if (!bufs.empty()) {
    at::_foreach_mul_(bufs, momentum_);
    at::_foreach_add_(bufs, bufs_grads, 1.0);
  }
  std::vector<at::Tensor> steps;
  steps.reserve(params.size());
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (params_[i].grad().defined()) steps.push_back(buffers_[i]);
  at::_foreach_add_(params, steps, -lr_);
}

std::int64_t Sgd::state_bytes() const {
  std::int64_t n = 0;
  for (const auto& b : buffers_)
    if (b.defined()) n += b.numel() * static_cast<std::int64_t>(b.element_size());
  return n;
}

}  // namespace dtbench::train
