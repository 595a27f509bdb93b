#pragma once
// Causal self-attention's core, shared by the decoders (gpt.h, llama.h):
// scores QKᵀ/√d, the causal mask, softmax and the weighted sum of V, written
// out as two batched matmuls and a masked softmax so the FLOP counter sees
// the products. Grouped-query attention: each of K's and V's heads serves
// q.size(1) / k.size(1) query heads (repeated here).
#include <torch/types.h>

namespace dtbench::models {

// q [b, heads, t, d], k and v [b, kv_heads, t, d] → [b, heads, t, d]. With
// `recompute` (--activation-checkpointing selective) only q, k and v are kept
// for backward and the rest is computed again there (models/checkpoint.h).
torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               bool recompute);

}  // namespace dtbench::models
