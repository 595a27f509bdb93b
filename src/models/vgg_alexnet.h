#pragma once
// torchvision's VGG-16 (no batch norm) and AlexNet: a `features` Sequential, an
// adaptive average pool, a `classifier` Sequential, with torchvision's module
// indices so parameter names match ("features.0.weight", "classifier.6.bias").
#include <torch/nn/modules/container/sequential.h>

#include "models/model.h"

namespace dtbench::models {

class VggAlexImpl : public torch::nn::Module {
 public:
  // `vgg` true: VGG-16; false: AlexNet.
  VggAlexImpl(bool vgg, int64_t num_classes);
  torch::Tensor forward(torch::Tensor x);

 private:
  int64_t pool_;
  torch::nn::Sequential features_{nullptr}, classifier_{nullptr};
};
TORCH_MODULE(VggAlex);

}  // namespace dtbench::models
