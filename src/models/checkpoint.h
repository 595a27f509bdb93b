#pragma once
// Activation checkpointing (torch.utils.checkpoint's recomputation, as
// torchtitan's and Megatron-LM's activation checkpointing apply it): a
// checkpointed region keeps only its inputs from forward; its backward runs
// the region's forward again, under the same autocast state, and
// differentiates that. The region's parameters are the function's inputs
// too, so their gradients reach each parameter's accumulator in the outer
// backward (a DDP Reducer's or a sharded strategy's hooks fire there, as
// without checkpointing); the inner backward only computes.
#include <functional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "layout/recompute.h"

namespace dtbench::models {

// What a model recomputes in backward (--activation-checkpointing).
using layout::Recompute;
using layout::recompute_name;
using layout::parse_recompute;

using Region = std::function<torch::Tensor(const std::vector<torch::Tensor>& inputs)>;

// region(inputs), keeping none of its intermediate tensors for backward:
// backward recomputes region(inputs) and returns the gradients of `inputs`
// and of `params` (the parameters region uses, each once; those not
// requiring a gradient get none). A parameter the recomputation reaches that
// is not in `params` would lose its gradient: backward fails naming it
// instead. `buffers` (batch norm's running statistics) are put back as
// forward left them after the recomputation, which would otherwise update
// them a second time. The region must not draw random numbers (dropout):
// the recomputation would draw others. In no-grad mode it is a plain call.
torch::Tensor checkpoint(Region region, const std::vector<torch::Tensor>& inputs,
                         const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& buffers = {});

}  // namespace dtbench::models
