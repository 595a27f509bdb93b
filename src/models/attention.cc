#include "models/attention.h"

#include <cmath>
#include <limits>

#include "models/checkpoint.h"

namespace dtbench::models {
namespace {

torch::Tensor core(const torch::Tensor& q, torch::Tensor k, torch::Tensor v) {
  const int64_t heads = q.size(1), kv_heads = k.size(1), t = q.size(2), d = q.size(3);
  if (kv_heads != heads) {  // grouped-query attention: each key/value head serves a group
    k = k.repeat_interleave(heads / kv_heads, 1);
    v = v.repeat_interleave(heads / kv_heads, 1);
  }
  auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d)));
  const auto future = torch::ones({t, t}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
  att = torch::softmax(att.masked_fill(future, -std::numeric_limits<float>::infinity()), -1);
  return torch::matmul(att, v);
}

}  // namespace

torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               bool recompute) {
  if (!recompute) return core(q, k, v);
  return checkpoint([](const std::vector<torch::Tensor>& in) { return core(in[0], in[1], in[2]); }, {q, k, v}, {});
}

}  // namespace dtbench::models
