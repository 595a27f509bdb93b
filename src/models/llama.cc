#include "models/llama.h"

#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "models/attention.h"

namespace dtbench::models {
namespace {

constexpr double kRopeTheta = 500000.0;  // Llama 3's
constexpr double kNormEps = 1e-5;

torch::nn::Linear no_bias(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

// Rotary position embedding of x [b, heads, t, d] (rotate-half form): the
// first and second halves of each head's features are the real and
// imaginary parts rotated by position x frequency.
torch::Tensor rope(const torch::Tensor& x) {
  const int64_t t = x.size(2), d = x.size(3), half = d / 2;
  const auto f32 = x.options().dtype(torch::kFloat);
  const auto freqs = torch::pow(kRopeTheta, torch::arange(0, half, f32) * (-2.0 / static_cast<double>(d)));
  const auto angles = torch::arange(0, t, f32).unsqueeze(1) * freqs.unsqueeze(0);  // [t, d/2]
  const auto emb = torch::cat({angles, angles}, 1);                               // [t, d]
  const auto cos = emb.cos().to(x.scalar_type()), sin = emb.sin().to(x.scalar_type());
  const auto rotated = torch::cat({-x.narrow(3, half, half), x.narrow(3, 0, half)}, 3);
  return x * cos + rotated * sin;
}

}  // namespace

RmsNormImpl::RmsNormImpl(int64_t width, double eps) : eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({width}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  const auto xf = x.to(torch::kFloat);
  const auto normed = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return normed.to(x.scalar_type()) * weight_;
}

LlamaBlockImpl::LlamaBlockImpl(int64_t width, int64_t heads, int64_t kv_heads, int64_t ffn_hidden)
    : heads_(heads), kv_heads_(kv_heads), head_dim_(width / heads) {
  const int64_t head_dim = width / heads;
  // Hugging Face's order: self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj,
  // input_layernorm, post_attention_layernorm (flat names here).
  q_ = register_module("self_attn_q_proj", no_bias(width, width));
  k_ = register_module("self_attn_k_proj", no_bias(width, kv_heads * head_dim));
  v_ = register_module("self_attn_v_proj", no_bias(width, kv_heads * head_dim));
  o_ = register_module("self_attn_o_proj", no_bias(width, width));
  gate_ = register_module("mlp_gate_proj", no_bias(width, ffn_hidden));
  up_ = register_module("mlp_up_proj", no_bias(width, ffn_hidden));
  down_ = register_module("mlp_down_proj", no_bias(ffn_hidden, width));
  input_norm_ = register_module("input_layernorm", RmsNorm(width, kNormEps));
  post_attention_norm_ = register_module("post_attention_layernorm", RmsNorm(width, kNormEps));
}

torch::Tensor LlamaBlockImpl::forward(torch::Tensor x, bool recompute_attention) {
  const int64_t b = x.size(0), t = x.size(1), d = head_dim_, c = heads_ * d;
  const auto h = column_input(input_norm_(x));
  auto q = rope(q_(h).view({b, t, heads_, d}).transpose(1, 2));  // [b, heads, t, d]
  auto k = rope(k_(h).view({b, t, kv_heads_, d}).transpose(1, 2));
  auto v = v_(h).view({b, t, kv_heads_, d}).transpose(1, 2);
  const auto att = causal_attention(q, k, v, recompute_attention);  // [b, heads, t, d]
  x = x + row_parallel(o_, att.transpose(1, 2).contiguous().view({b, t, c}));
  const auto f = column_input(post_attention_norm_(x));
  return x + row_parallel(down_, torch::silu(gate_(f)) * up_(f));
}

torch::Tensor LlamaBlockImpl::column_input(const torch::Tensor& x) { return tp_ ? tp_->copy_in(x) : x; }

torch::Tensor LlamaBlockImpl::row_parallel(torch::nn::Linear& layer, const torch::Tensor& x) {
  return tp_ ? tp_->reduce_out(layer(x)) : layer(x);  // Llama's projections have no bias to add once
}

void LlamaBlockImpl::parallelize_tp(const TpRegion& region) {
  DTBENCH_CHECK(!tp_, "a block split twice");
  const int n = region.size, r = region.rank;
  if (heads_ % n != 0 || kv_heads_ % n != 0 || gate_->weight.size(0) % n != 0)
    throw UsageError(fmt::format("llama: {} heads, {} key/value heads and an MLP {} wide do not all split {} ways (--tp)",
                                 heads_, kv_heads_, gate_->weight.size(0), n));
  for (auto* layer : {&q_, &k_, &v_, &gate_, &up_}) replace_data((*layer)->weight, shard_rows((*layer)->weight, 1, n, r));
  for (auto* layer : {&o_, &down_}) replace_data((*layer)->weight, shard_columns((*layer)->weight, n, r));
  heads_ /= n;
  kv_heads_ /= n;
  tp_ = region;
}

LlamaImpl::LlamaImpl(const ModelOptions& o) : blocks_(o.layers) {
  span_.end_block = o.layers;
  const int64_t kv = o.kv_heads > 0 ? o.kv_heads : o.heads;
  if (o.width % o.heads != 0 || (o.width / o.heads) % 2 != 0)
    throw UsageError(fmt::format("llama: width {} is not {} heads of an even size", o.width, o.heads));
  if (o.heads % kv != 0)
    throw UsageError(fmt::format("llama: {} heads are not a multiple of {} key/value heads", o.heads, kv));
  embed_ = register_module("embed_tokens", torch::nn::Embedding(o.vocab, o.width));
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.layers; ++i) {
    LlamaBlock block(o.width, o.heads, kv, llama_ffn_hidden(o));
    layers_->push_back(block);
    add_unit(block.ptr());
  }
  norm_ = register_module("norm", RmsNorm(o.width, kNormEps));
  lm_head_ = register_module("lm_head", no_bias(o.width, o.vocab));
}

void LlamaImpl::parallelize_tp(const TpRegion& region) {
  DTBENCH_CHECK(!cut_, "tensor parallelism applies to a whole model, before its pipeline cut");
  for (std::size_t i = 0; i < layers_->size(); ++i) (*layers_)[i]->as<LlamaBlock>()->parallelize_tp(region);
}

void LlamaImpl::keep_stage(const StageSpan& span) {
  DTBENCH_CHECK(!cut_, "a model cut into a stage twice");
  layers_ = torch::nn::ModuleList(replace_module("layers", stage_blocks_only(layers_, span)));
  keep_units(span.first_block, span.end_block);
  if (!span.embedding) {
    unregister_module("embed_tokens");
    embed_ = nullptr;
  }
  if (!span.head) {
    unregister_module("norm");
    unregister_module("lm_head");
    norm_ = nullptr;
    lm_head_ = nullptr;
  }
  span_ = span;
  cut_ = true;
}

torch::Tensor LlamaImpl::forward(torch::Tensor input) {
  auto x = span_.embedding ? embed_(input) : input;
  for (auto i = static_cast<std::size_t>(span_.first_block); i < static_cast<std::size_t>(span_.end_block); ++i) {
    auto* block = (*layers_)[i]->as<LlamaBlock>();
    x = run_unit(
        static_cast<int>(i),
        [block, sel = recompute_attention()](const torch::Tensor& in) { return block->forward(in, sel); }, x);
  }
  if (!span_.head) return x;
  return lm_head_(norm_(x));
}

}  // namespace dtbench::models
