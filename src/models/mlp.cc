#include "models/mlp.h"

#include <torch/nn/functional/activation.h>

namespace dtbench::models {

MlpImpl::MlpImpl(int64_t in_features, int64_t hidden, int64_t num_classes)
    : fc1_(register_module("fc1", torch::nn::Linear(in_features, hidden))),
      fc2_(register_module("fc2", torch::nn::Linear(hidden, hidden))),
      fc3_(register_module("fc3", torch::nn::Linear(hidden, num_classes))) {}

torch::Tensor MlpImpl::forward(torch::Tensor x) {
  namespace F = torch::nn::functional;
  return fc3_(F::relu(fc2_(F::relu(fc1_(x)))));
}

}  // namespace dtbench::models
