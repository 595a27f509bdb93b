#pragma once
// A transformer-encoder language model, BERT-base-like by default (12 layers,
// width 768, 12 heads, feed-forward 4x width): token + learned position
// embeddings, torch::nn::TransformerEncoder (post-norm, GELU), final LayerNorm
// and a linear LM head over the vocabulary (not tied to the embedding). Input: token ids [batch, seq_len];
// output: logits [batch, seq_len, vocab]. Parameters: vocab*w + seq*w +
// layers*(12w^2 + 13w) + 2w + w*vocab + vocab.
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/transformercoder.h>
#include <torch/nn/modules/transformerlayer.h>

#include "models/model.h"

namespace dtbench::models {

class TransformerLmImpl : public torch::nn::Module {
 public:
  explicit TransformerLmImpl(const ModelOptions& o);
  torch::Tensor forward(torch::Tensor tokens);

 private:
  int64_t seq_len_;
  torch::nn::Embedding tokens_{nullptr}, positions_{nullptr};
  torch::nn::TransformerEncoder encoder_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(TransformerLm);

}  // namespace dtbench::models
