#pragma once
// Momentum SGD over all parameters at once, with ATen's multi-tensor
// (_foreach_) ops: the update torch.optim.SGD makes with foreach=True, its
// default on CUDA. The arithmetic is LibTorch's torch::optim::SGD (no
// dampening, weight decay or Nesterov):
//   first step  buf = grad;   later  buf = momentum * buf + grad;   p -= lr * buf
// (momentum 0: p -= lr * grad). torch::optim::SGD loops over the parameters,
// three kernel launches each on a GPU, which makes the host, not the GPU,
// the limit for models with many small tensors; here a step is a few
// launches. On the CPU the _foreach_ ops run the same per-tensor kernels.
#include <vector>

#include <torch/types.h>

#include "train/optimizer.h"

namespace dtbench::train {

class Sgd final : public Optimizer {
 public:
  Sgd(std::vector<torch::Tensor> params, double lr, double momentum);

  void step() override;
  int states_per_parameter() const override { return momentum_ == 0 ? 0 : 1; }
  std::int64_t state_bytes() const override;

 private:
  std::vector<torch::Tensor> buffers_;  // undefined until a parameter's first step
  double lr_;
  double momentum_;
};

}  // namespace dtbench::train
