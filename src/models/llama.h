#pragma once
// Llama-style decoder (Llama 3's architecture): token embedding, `layers`
// pre-norm blocks — RMSNorm, causal self-attention with grouped-query heads
// (q_proj: width -> width, k_proj/v_proj: width -> kv_heads x head_dim,
// o_proj; rotary position embedding on q and k, theta 500000; each key/value
// head serves heads / kv_heads query heads), residual; RMSNorm, SwiGLU
// feed-forward (down_proj(silu(gate_proj(x)) * up_proj(x)), hidden 3.5 x
// width as in Llama 3 8B and 70B), residual — a final RMSNorm and an untied
// LM head. No biases, no dropout. The parameter shapes and order of Hugging
// Face's LlamaForCausalLM (Llama 3.1 8B: 8,030,261,248 elements). Rotary
// embedding in Hugging Face's rotate-half form. Attention is written out (two
// batched matmuls and a masked softmax) so the FLOP counter sees its
// products. Input: token ids [batch, seq_len]; output: logits [batch,
// seq_len, vocab].
#include <optional>

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "models/model.h"
#include "models/tensor_parallel.h"

namespace dtbench::models {

// Root-mean-square normalisation with a learned scale (no mean, no bias).
class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t width, double eps);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  double eps_;
  torch::Tensor weight_;
};
TORCH_MODULE(RmsNorm);

class LlamaBlockImpl : public torch::nn::Module {
 public:
  LlamaBlockImpl(int64_t width, int64_t heads, int64_t kv_heads, int64_t ffn_hidden);
  // `recompute_attention`: the attention core is recomputed in backward
  // (--activation-checkpointing selective; models/attention.h).
  torch::Tensor forward(torch::Tensor x, bool recompute_attention = false);
  // Keeps this rank's query heads of q_proj and their key/value heads of
  // k_proj and v_proj (column-parallel), its columns of o_proj
  // (row-parallel), its part of gate_proj and up_proj (column-parallel) and
  // of down_proj (row-parallel).
  void parallelize_tp(const TpRegion& region);

 private:
  // A column-parallel layer's input / a row-parallel layer's product.
  torch::Tensor column_input(const torch::Tensor& x);
  torch::Tensor row_parallel(torch::nn::Linear& layer, const torch::Tensor& x);

  int64_t heads_, kv_heads_;  // this rank's (all of them without tensor parallelism)
  int64_t head_dim_;
  std::optional<TpRegion> tp_;  // set by parallelize_tp
  RmsNorm input_norm_{nullptr}, post_attention_norm_{nullptr};
  torch::nn::Linear q_{nullptr}, k_{nullptr}, v_{nullptr}, o_{nullptr};
  torch::nn::Linear gate_{nullptr}, up_{nullptr}, down_{nullptr};
};
TORCH_MODULE(LlamaBlock);

// FSDP units: the blocks; the embedding, final norm and head are the root's.
// Pipeline stages: the first holds the embedding, the last the final norm
// and the (untied) head.
class LlamaImpl : public torch::nn::Module, public UnitSeam, public TpSeam, public PpSeam {
 public:
  explicit LlamaImpl(const ModelOptions& o);
  // Token ids -> logits; a pipeline stage's part of that (models/pipeline_split.h).
  torch::Tensor forward(torch::Tensor input);
  // The blocks split (LlamaBlockImpl::parallelize_tp); the embedding, final
  // norm and head replicated.
  void parallelize_tp(const TpRegion& region) override;
  int64_t pipeline_blocks() const override { return blocks_; }
  void keep_stage(const StageSpan& span) override;

 protected:
  bool has_attention() const override { return true; }

 private:
  int64_t blocks_;
  StageSpan span_;
  bool cut_ = false;
  torch::nn::Embedding embed_{nullptr};
  torch::nn::ModuleList layers_{nullptr};
  RmsNorm norm_{nullptr};
  torch::nn::Linear lm_head_{nullptr};
};
TORCH_MODULE(Llama);

}  // namespace dtbench::models
