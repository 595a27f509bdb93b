#include "models/mlp.h"

#include <torch/nn/functional/activation.h>

namespace dtbench::models {

MlpImpl::MlpImpl(int64_t in_features, int64_t hidden, int64_t num_classes)
    : fc1_(register_module("fc1", torch::nn::Linear(in_features, hidden))),
      fc2_(register_module("fc2", torch::nn::Linear(hidden, hidden))),
      fc3_(register_module("fc3", torch::nn::Linear(hidden, num_classes))) {
  // FSDP units: the two hidden layers; the classifier is the root's.
  add_unit(fc1_.ptr());
  add_unit(fc2_.ptr());
}

torch::Tensor MlpImpl::forward(torch::Tensor x) {
  namespace F = torch::nn::functional;
  x = run_unit(0, [this](const torch::Tensor& in) { return F::relu(fc1_(in)); }, x);
  x = run_unit(1, [this](const torch::Tensor& in) { return F::relu(fc2_(in)); }, x);
  return fc3_(x);
}

}  // namespace dtbench::models
