#pragma once
// AdamW (decoupled weight decay, Loshchilov & Hutter) over all parameters at
// once with ATen's multi-tensor (_foreach_) ops, the update torch.optim.AdamW
// makes (amsgrad off), bit for bit with the torch.optim.AdamW of the same
// LibTorch version on the CPU (tests/train/adamw_test.cc runs it):
//   t += 1;  p *= 1 - lr * weight_decay
//   m = beta1 * m + (1 - beta1) * g          (lerp from PyTorch 2.0)
//   v = beta2 * v + (1 - beta2) * g * g
//   p += -(lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// Two float32 states per parameter (m, v), made on a parameter's first step
// with a gradient, and a step count per parameter.
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "train/optimizer.h"

namespace dtbench::train {

class AdamW final : public Optimizer {
 public:
  // torch.optim.AdamW's defaults.
  struct Options {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 1e-2;
  };
  AdamW(std::vector<torch::Tensor> params, Options o);

  void step() override;
  int states_per_parameter() const override { return 2; }
  std::int64_t state_bytes() const override;

 private:
  Options o_;
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_;  // undefined until a parameter's first step
  std::vector<std::int64_t> steps_;
};

}  // namespace dtbench::train
