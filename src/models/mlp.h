#pragma once
// A small MLP for fast tests and framework-overhead measurements:
// Linear(in, hidden) - ReLU - Linear(hidden, hidden) - ReLU - Linear(hidden, classes).
// No batch norm, so N ranks x batch B equal one process x batch N*B exactly.
#include <torch/nn/modules/linear.h>

#include "models/model.h"

namespace dtbench::models {

class MlpImpl : public torch::nn::Module, public UnitSeam {
 public:
  MlpImpl(int64_t in_features, int64_t hidden, int64_t num_classes);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr}, fc3_{nullptr};
};
TORCH_MODULE(Mlp);

}  // namespace dtbench::models
