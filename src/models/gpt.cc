#include "models/gpt.h"

#include <fmt/format.h>
#include <torch/nn/functional/activation.h>

#include "core/error.h"
#include "models/attention.h"
#include "models/linear.h"

namespace dtbench::models {

GptBlockImpl::GptBlockImpl(int64_t width, int64_t heads) : head_dim_(width / heads), local_width_(width) {
  ln_1_ = register_module("ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
  // Registered as attn.c_attn / attn.c_proj and mlp.c_fc / mlp.c_proj in
  // Hugging Face's names; flat here, in the same order.
  c_attn_ = register_module("attn_c_attn", torch::nn::Linear(width, 3 * width));
  attn_proj_ = register_module("attn_c_proj", torch::nn::Linear(width, width));
  ln_2_ = register_module("ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
  c_fc_ = register_module("mlp_c_fc", torch::nn::Linear(width, 4 * width));
  mlp_proj_ = register_module("mlp_c_proj", torch::nn::Linear(4 * width, width));
}

torch::Tensor GptBlockImpl::forward(torch::Tensor x, bool recompute_attention) {
  const int64_t b = x.size(0), t = x.size(1), c = local_width_, d = head_dim_;
  auto qkv = linear(c_attn_, column_input(ln_1_(x))).split(c, /*dim=*/2);
  auto heads = [&](const torch::Tensor& y) { return y.view({b, t, c / d, d}).transpose(1, 2); };
  const auto q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);  // [b, heads, t, d]
  auto y = causal_attention(q, k, v, recompute_attention).transpose(1, 2).contiguous().view({b, t, c});
  x = x + row_parallel(attn_proj_, y);
  return x + row_parallel(mlp_proj_, torch::gelu(linear(c_fc_, column_input(ln_2_(x))), "tanh"));
}

torch::Tensor GptBlockImpl::column_input(const torch::Tensor& x) { return tp_ ? tp_->copy_in(x) : x; }

torch::Tensor GptBlockImpl::row_parallel(torch::nn::Linear& layer, const torch::Tensor& x) {
  if (!tp_) return linear(layer, x);
  // The bias once, after the sum, in the product's dtype (under autocast the
  // float32 bias would otherwise turn the residual stream float32, where the
  // unsplit layer's addmm keeps it bf16).
  const auto y = tp_->reduce_out(torch::linear(x, layer->weight));
  return y + layer->bias.to(y.scalar_type());
}

void GptBlockImpl::parallelize_tp(const TpRegion& region) {
  DTBENCH_CHECK(!tp_, "a block split twice");
  const int n = region.size, r = region.rank;
  if ((local_width_ / head_dim_) % n != 0)
    throw UsageError(fmt::format("gpt: {} attention heads do not split {} ways (--tp)", local_width_ / head_dim_, n));
  replace_data(c_attn_->weight, shard_rows(c_attn_->weight, 3, n, r));
  replace_data(c_attn_->bias, shard_rows(c_attn_->bias, 3, n, r));
  replace_data(attn_proj_->weight, shard_columns(attn_proj_->weight, n, r));
  replace_data(c_fc_->weight, shard_rows(c_fc_->weight, 1, n, r));
  replace_data(c_fc_->bias, shard_rows(c_fc_->bias, 1, n, r));
  replace_data(mlp_proj_->weight, shard_columns(mlp_proj_->weight, n, r));
  local_width_ /= n;
  tp_ = region;
}

GptImpl::GptImpl(const ModelOptions& o) : positions_(o.positions), blocks_(o.layers) {
  span_.end_block = o.layers;
  if (o.width % o.heads != 0)
    throw UsageError(fmt::format("gpt: width {} is not divisible by {} heads", o.width, o.heads));
  if (o.seq_len > o.positions)
    throw UsageError(fmt::format("gpt: --seq-len {} is longer than the model's {} positions", o.seq_len,
                                 o.positions));
  wte_ = register_module("wte", torch::nn::Embedding(o.vocab, o.width));
  wpe_ = register_module("wpe", torch::nn::Embedding(o.positions, o.width));
  h_ = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.layers; ++i) {
    GptBlock block(o.width, o.heads);
    h_->push_back(block);
    add_unit(block.ptr());
  }
  ln_f_ = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.width})));
}

void GptImpl::parallelize_tp(const TpRegion& region) {
  DTBENCH_CHECK(!cut_, "tensor parallelism applies to a whole model, before its pipeline cut");
  for (std::size_t i = 0; i < h_->size(); ++i) (*h_)[i]->as<GptBlock>()->parallelize_tp(region);
}

void GptImpl::keep_stage(const StageSpan& span) {
  DTBENCH_CHECK(!cut_, "a model cut into a stage twice");
  h_ = torch::nn::ModuleList(replace_module("h", stage_blocks_only(h_, span)));
  keep_units(span.first_block, span.end_block);
  if (!span.embedding) {
    unregister_module("wpe");
    wpe_ = nullptr;
  }
  if (!span.head) {
    unregister_module("ln_f");
    ln_f_ = nullptr;
  }
  if (!span.embedding && !span.head) {
    unregister_module("wte");
    wte_ = nullptr;
  }
  span_ = span;
  cut_ = true;
}

std::vector<torch::Tensor> GptImpl::tied_parameters() const {
  if (span_.embedding == span_.head) return {};  // both ends here, or neither
  return {wte_->weight};
}

torch::Tensor GptImpl::forward(torch::Tensor input) {
  torch::Tensor x = input;
  if (span_.embedding) {
    const int64_t t = input.size(1);
    DTBENCH_CHECK(t <= positions_, "sequence longer than the position table");
    auto pos = torch::arange(t, input.options().dtype(torch::kLong));
    x = wte_(input) + wpe_(pos).unsqueeze(0);
  }
  for (auto i = static_cast<std::size_t>(span_.first_block); i < static_cast<std::size_t>(span_.end_block); ++i) {
    auto* block = (*h_)[i]->as<GptBlock>();
    x = run_unit(
        static_cast<int>(i),
        [block, sel = recompute_attention()](const torch::Tensor& in) { return block->forward(in, sel); }, x);
  }
  if (!span_.head) return x;
  // The LM head is the token embedding (tied): one parameter, two uses.
  return torch::linear(ln_f_(x), wte_->weight);
}

}  // namespace dtbench::models
