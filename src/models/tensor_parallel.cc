#include "models/tensor_parallel.h"

#include <vector>

#include <fmt/format.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "models/model.h"

namespace dtbench::models {

std::string gpt_tp_refusal(const ModelOptions& o, int tp) {
  if (tp < 1) return fmt::format("--tp {} must be at least 1", tp);
  if (o.heads % tp != 0) return fmt::format("gpt: {} attention heads do not split {} ways (--tp)", o.heads, tp);
  return "";
}

std::string llama_tp_refusal(const ModelOptions& o, int tp) {
  if (tp < 1) return fmt::format("--tp {} must be at least 1", tp);
  const int64_t kv = o.kv_heads > 0 ? o.kv_heads : o.heads;
  if (o.heads % tp != 0) return fmt::format("llama: {} attention heads do not split {} ways (--tp)", o.heads, tp);
  if (kv % tp != 0) return fmt::format("llama: {} key/value heads do not split {} ways (--tp)", kv, tp);
  const int64_t ffn = llama_ffn_hidden(o);
  if (ffn % tp != 0) return fmt::format("llama: the MLP's width {} does not split {} ways (--tp)", ffn, tp);
  return "";
}

torch::Tensor shard_rows(const torch::Tensor& t, int parts, int size, int rank) {
  const int64_t part = t.size(0) / parts, shard = part / size;
  std::vector<torch::Tensor> pieces;
  for (int p = 0; p < parts; ++p) pieces.push_back(t.narrow(0, p * part + rank * shard, shard));
  return torch::cat(pieces, 0).contiguous();
}

torch::Tensor shard_columns(const torch::Tensor& t, int size, int rank) {
  const int64_t shard = t.size(1) / size;
  return t.narrow(1, rank * shard, shard).contiguous();
}

void replace_data(torch::Tensor& param, const torch::Tensor& value) {
  torch::NoGradGuard no_grad;
  param.set_(value.clone());
}

}  // namespace dtbench::models
