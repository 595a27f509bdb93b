#include "train/adamw.h"

#include <cmath>

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "compat/optim_compat.h"

namespace dtbench::train {

AdamW::AdamW(std::vector<torch::Tensor> params, Options o)
    : Optimizer(std::move(params)),
      o_(o),
      exp_avg_(params_.size()),
      exp_avg_sq_(params_.size()),
      steps_(params_.size(), 0) {}

void AdamW::step() {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> params, grads, m, v;
  std::vector<at::Scalar> step_size, bc2_sqrt;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const auto& g = params_[i].grad();
    if (!g.defined()) continue;
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] = at::zeros_like(params_[i], at::MemoryFormat::Preserve);
      exp_avg_sq_[i] = at::zeros_like(params_[i], at::MemoryFormat::Preserve);
    }
    const double t = static_cast<double>(++steps_[i]);
    params.push_back(params_[i]);
    grads.push_back(g);
    m.push_back(exp_avg_[i]);
    v.push_back(exp_avg_sq_[i]);
    // torch.optim: step_size = (lr / bias_correction1) * -1, in doubles.
    step_size.emplace_back((o_.lr / (1 - std::pow(o_.beta1, t))) * -1);
    bc2_sqrt.emplace_back(compat::adam_bias_correction2_sqrt(1 - std::pow(o_.beta2, t)));
  }
  if (params.empty()) return;
  // torch.optim.AdamW multiplies even by 1.0; that is exact, so skip it.
  if (o_.weight_decay != 0) at::_foreach_mul_(params, 1 - o_.lr * o_.weight_decay);
  compat::adam_first_moment_(m, grads, o_.beta1);
  at::_foreach_mul_(v, o_.beta2);
  at::_foreach_addcmul_(v, grads, grads, 1 - o_.beta2);
  auto denom = at::_foreach_sqrt(v);
  at::_foreach_div_(denom, bc2_sqrt);
  at::_foreach_add_(denom, o_.eps);
  at::_foreach_addcdiv_(params, m, denom, step_size);
}

std::int64_t AdamW::state_bytes() const {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < exp_avg_.size(); ++i)
    if (exp_avg_[i].defined())
      n += 2 * exp_avg_[i].numel() * static_cast<std::int64_t>(exp_avg_[i].element_size());
  return n;
}

}  // namespace dtbench::train
