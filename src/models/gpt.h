#pragma once
// GPT-2 (decoder-only): token and learned position embeddings, `layers`
// pre-norm blocks — LayerNorm, causal self-attention (c_attn: width ->
// 3 x width, heads of width / heads, c_proj), residual; LayerNorm, MLP
// (c_fc: width -> 4 x width, GELU (tanh), c_proj), residual — a final
// LayerNorm, and the LM head tied to the token embedding (logits =
// x . wte^T). The shapes and parameter order of Hugging Face's
// GPT2LMHeadModel (its Conv1D weights are stored [in, out], these Linear
// weights [out, in]: the same counts; GPT-2 small has 124,439,808). No
// dropout (as nanoGPT's and torchtitan's benchmark configurations): every
// rank and a one-process reference compute the same thing. Attention is
// written out (two batched matmuls and a masked softmax), so the FLOP
// counter sees its products. Input: token ids [batch, seq_len <= positions];
// output: logits [batch, seq_len, vocab].
#include <optional>

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "models/model.h"
#include "models/tensor_parallel.h"

namespace dtbench::models {

class GptBlockImpl : public torch::nn::Module {
 public:
  GptBlockImpl(int64_t width, int64_t heads);
  // `recompute_attention`: the attention core is recomputed in backward
  // (--activation-checkpointing selective; models/attention.h).
  torch::Tensor forward(torch::Tensor x, bool recompute_attention = false);
  // Keeps this rank's heads of c_attn (column-parallel: its rows of q, k
  // and v) and of attn.c_proj (row-parallel: its columns), and its part of
  // mlp.c_fc (column-parallel) and mlp.c_proj (row-parallel).
  void parallelize_tp(const TpRegion& region);

 private:
  // A row-parallel layer: this rank's product summed over the group, then
  // the (replicated) bias.
  torch::Tensor row_parallel(torch::nn::Linear& layer, const torch::Tensor& x);
  // A column-parallel layer's input: the gradient summed over the group.
  torch::Tensor column_input(const torch::Tensor& x);

  int64_t head_dim_;
  int64_t local_width_;  // this rank's heads x head_dim (the width without tensor parallelism)
  std::optional<TpRegion> tp_;  // set by parallelize_tp
  torch::nn::LayerNorm ln_1_{nullptr}, ln_2_{nullptr};
  torch::nn::Linear c_attn_{nullptr}, attn_proj_{nullptr}, c_fc_{nullptr}, mlp_proj_{nullptr};
};
TORCH_MODULE(GptBlock);

// FSDP units: the blocks; the embeddings, final norm and (tied) head are the
// root's.
// Pipeline stages: the first holds wte and wpe, the last ln_f and the tied
// head, so both hold wte (tied_parameters).
class GptImpl : public torch::nn::Module, public UnitSeam, public TpSeam, public PpSeam {
 public:
  explicit GptImpl(const ModelOptions& o);
  // Token ids -> logits; a pipeline stage's part of that (models/pipeline_split.h).
  torch::Tensor forward(torch::Tensor input);
  // The blocks split (GptBlockImpl::parallelize_tp); the embeddings, final
  // norm and tied head replicated.
  void parallelize_tp(const TpRegion& region) override;
  int64_t pipeline_blocks() const override { return blocks_; }
  void keep_stage(const StageSpan& span) override;
  std::vector<torch::Tensor> tied_parameters() const override;

 protected:
  bool has_attention() const override { return true; }

 private:
  int64_t positions_, blocks_;
  StageSpan span_;
  bool cut_ = false;
  torch::nn::Embedding wte_{nullptr}, wpe_{nullptr};
  torch::nn::ModuleList h_{nullptr};
  torch::nn::LayerNorm ln_f_{nullptr};
};
TORCH_MODULE(Gpt);

}  // namespace dtbench::models
