#include "train/loss_scaler.h"

#include <ATen/ATen.h>

#include "compat/amp_compat.h"

namespace dtbench::train {

LossScaler::LossScaler(const LossScalerOptions& opts, const torch::Device& device)
    : opts_(opts),
      scale_(at::full({1}, opts.init_scale, at::TensorOptions().dtype(at::kFloat).device(device))),
      growth_tracker_(at::zeros({1}, at::TensorOptions().dtype(at::kInt).device(device))),
      found_inf_(at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(device))) {}

torch::Tensor LossScaler::scale(const torch::Tensor& loss) const { return loss * scale_.to(loss.dtype()); }

bool LossScaler::unscale(const std::vector<torch::Tensor>& params) {
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  found_inf_.zero_();
  const auto inv = scale_.reciprocal();
  compat::amp_unscale_and_check(grads, found_inf_, inv);
  const bool skip = found_inf_.item<float>() > 0;
  if (skip) ++skipped_;
  return skip;
}

void LossScaler::update() {
  compat::amp_update_scale(scale_, growth_tracker_, found_inf_, opts_.growth, opts_.backoff,
                           opts_.interval);
}

double LossScaler::current_scale() const { return scale_.item<double>(); }

}  // namespace dtbench::train
