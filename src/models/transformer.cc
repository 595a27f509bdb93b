#include "models/transformer.h"

#include <fmt/format.h>

#include "core/error.h"
#include "models/linear.h"

namespace dtbench::models {

TransformerLmImpl::TransformerLmImpl(const ModelOptions& o) : seq_len_(o.seq_len) {
  if (o.width % o.heads != 0)
    throw UsageError(fmt::format("transformer: width {} is not divisible by {} heads", o.width, o.heads));
  if (o.layers < 1 || o.seq_len < 1 || o.vocab < 2)
    throw UsageError("transformer: layers, sequence length and vocabulary must be positive");
  tokens_ = register_module("tokens", torch::nn::Embedding(o.vocab, o.width));
  positions_ = register_module("positions", torch::nn::Embedding(o.seq_len, o.width));
  auto layer = torch::nn::TransformerEncoderLayer(
      torch::nn::TransformerEncoderLayerOptions(o.width, o.heads)
          .dim_feedforward(4 * o.width)
          .dropout(0.1)
          .activation(torch::kGELU));
  encoder_ = register_module(
      "encoder", torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(layer, o.layers)));
  norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.width})));
  head_ = register_module("head", torch::nn::Linear(o.width, o.vocab));
}

torch::Tensor TransformerLmImpl::forward(torch::Tensor tokens) {
  const int64_t seq = tokens.size(1);
  DTBENCH_CHECK(seq <= seq_len_, "sequence longer than the position table");
  auto pos = torch::arange(seq, tokens.options().dtype(torch::kLong));
  auto x = tokens_(tokens) + positions_(pos).unsqueeze(0);  // [batch, seq, width]
  x = encoder_->forward(x.transpose(0, 1)).transpose(0, 1);  // the C++ encoder is seq-first
  return linear(head_, norm_(x));
}

}  // namespace dtbench::models
