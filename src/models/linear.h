#pragma once
// A Linear layer applied as Python's nn.Linear applies it: ATen's linear,
// which folds a contiguous 3-D input into one GEMM with the bias added in it
// (addmm), and under autocast casts the bias with the weight. LibTorch's C++
// Linear::forward takes another road for an input of more than two
// dimensions: matmul, then `output += bias`, a pass of its own over the
// output (under autocast a float32 bias added into the bf16 product). On
// GPT-2 small in bf16 (batch 40 x 1,024 tokens, one H200) that pass cost
// 14.7 ms of a 350 ms iteration: docs/PERFORMANCE.md.
#include <torch/nn/modules/linear.h>

namespace dtbench::models {

inline torch::Tensor linear(const torch::nn::Linear& layer, const torch::Tensor& x) {
  return torch::linear(x, layer->weight, layer->bias);
}

}  // namespace dtbench::models
