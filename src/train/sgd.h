#pragma once
// Momentum SGD over all parameters at once, with ATen's multi-tensor
// (_foreach_) ops: the update torch.optim.SGD makes with foreach=True, its
// default on CUDA. The arithmetic is LibTorch's torch::optim::SGD (no
// dampening or Nesterov; weight decay coupled, L2, as torch.optim.SGD's):
//   d = grad + weight_decay * p   (in place: .grad holds d after the step)
//   first step  buf = d;   later  buf = momentum * buf + d;   p -= lr * buf
// (momentum 0: p -= lr * d). PyTorch's DDP benchmark
// (benchmarks/distributed/ddp/benchmark.py) steps SGD(lr 0.001, momentum 0.9,
// weight_decay 1e-4): `dtbench ddp`'s defaults. torch::optim::SGD loops over the parameters,
// three kernel launches each on a GPU, which makes the host, not the GPU,
// the limit for models with many small tensors; here a step is a few
// launches. On the CPU the _foreach_ ops run the same per-tensor kernels.
#include <vector>

#include <torch/types.h>

#include "train/optimizer.h"

namespace dtbench::train {

class Sgd final : public Optimizer {
 public:
  Sgd(std::vector<torch::Tensor> params, double lr, double momentum, double weight_decay = 0);

  void step() override;
  int states_per_parameter() const override { return momentum_ == 0 ? 0 : 1; }
  std::int64_t state_bytes() const override;

 private:
  std::vector<torch::Tensor> buffers_;  // undefined until a parameter's first step
  double lr_;
  double momentum_;
  double weight_decay_;
};

}  // namespace dtbench::train
