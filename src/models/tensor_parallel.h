#pragma once
// Tensor parallelism as Megatron-LM splits a decoder block (PyTorch's
// ColwiseParallel / RowwiseParallel): the attention's query, key and value
// projections column-parallel by heads and its output projection
// row-parallel; the MLP's up (and gate) projections column-parallel by width
// and its down projection row-parallel. Per block two reductions forward
// (after each row-parallel product) and two backward (the gradient of each
// column-parallel input). Embeddings, norms, the LM head and the biases of
// row-parallel layers stay replicated: their gradients come out identical on
// every rank of the group, so the group needs no other exchange.
//
// A model family with a plan derives its module from TpSeam; the plan slices
// a whole model, made from the same seed on every rank of the group, into
// this rank's part in place (so a tensor-parallel run trains the very model
// one process would). The models stay free of communicators: the group's
// collectives come in as TpRegion's two mappings (layout/tp_region.h makes
// them from a communicator).
#include <cstdint>
#include <functional>
#include <string>

#include <torch/types.h>

namespace dtbench::models {

struct ModelOptions;

// A tensor-parallel group as a model sees it.
struct TpRegion {
  int size = 1;
  int rank = 0;
  // Megatron-Core's copy_to_tensor_model_parallel_region: identity forward,
  // the gradient summed over the group backward. Applied to the input of a
  // column-parallel layer.
  std::function<torch::Tensor(const torch::Tensor&)> copy_in;
  // reduce_from_tensor_model_parallel_region: the partial outputs summed
  // over the group forward, identity backward. Applied to the output of a
  // row-parallel layer's product, before its (replicated) bias.
  std::function<torch::Tensor(const torch::Tensor&)> reduce_out;
};

class TpSeam {
 public:
  virtual ~TpSeam() = default;
  // Slices the model into rank region.rank's part of region.size and makes
  // its forward use the mappings (the blocks keep a copy of `region`; the
  // communicator behind its mappings must outlive the model). Called once,
  // before training, on a whole model.
  virtual void parallelize_tp(const TpRegion& region) = 0;
};

// Why a decoder of these shapes cannot be split `tp` ways ("" when it can):
// heads, key/value heads or the MLP's width not divisible by tp.
std::string gpt_tp_refusal(const ModelOptions& o, int tp);
std::string llama_tp_refusal(const ModelOptions& o, int tp);

// Rows [rank·n/size, (rank+1)·n/size) of each of `parts` equal consecutive
// row blocks of `t` (a fused projection's q, k, v: parts 3), concatenated.
torch::Tensor shard_rows(const torch::Tensor& t, int parts, int size, int rank);
// Columns [rank·n/size, (rank+1)·n/size) of a [out, in] weight.
torch::Tensor shard_columns(const torch::Tensor& t, int size, int rank);
// Replaces `param`'s data by `value` in place (the module's registered
// parameter and every handle to it see the new shape).
void replace_data(torch::Tensor& param, const torch::Tensor& value);

}  // namespace dtbench::models
