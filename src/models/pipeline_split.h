#pragma once
// Pipeline parallelism's model split (torch.distributed.pipelining's
// manual stages, torchtitan's pipeline_llama): a stage is a run of a
// decoder's blocks, the first stage with the embeddings, the last with the
// final norm, the LM head and the loss. A model family that can be split
// derives its module from PpSeam; keep_stage cuts a whole model, made from
// the same seed on every rank, down to one stage in place (the other
// blocks, embeddings and head leave the module and free their parameters),
// after which forward() is the stage's: token ids (first stage) or hidden
// states [batch, seq, width] in, hidden states or (last stage) logits out.
// The models stay free of communicators: train/pipeline.h moves the
// activations.
#include <cstdint>
#include <vector>

#include <torch/nn/modules/container/modulelist.h>
#include <torch/types.h>

namespace dtbench::models {

struct StageSpan {
  int64_t first_block = 0, end_block = 0;  // blocks [first_block, end_block)
  bool embedding = true;                   // the first stage's
  bool head = true;                        // the last stage's: final norm, LM head
};

class PpSeam {
 public:
  virtual ~PpSeam() = default;
  virtual int64_t pipeline_blocks() const = 0;
  // Cuts the model to `span`. Once, before training (after parallelize_tp).
  virtual void keep_stage(const StageSpan& span) = 0;
  // Parameters the first and the last stage both hold (GPT-2's token
  // embedding, tied to its LM head): each stage's gradient of them is the
  // part of the whole model's its own use made, and the two must be summed
  // (Megatron-LM's embedding group). Empty for an untied model and for a
  // stage that is both first and last.
  virtual std::vector<torch::Tensor> tied_parameters() const { return {}; }
};

// `blocks` with those outside `span` replaced by empty modules (so the kept
// blocks keep their names, "h.2" on the stage as in the whole model): what
// a family's keep_stage registers in place of its block list.
torch::nn::ModuleList stage_blocks_only(const torch::nn::ModuleList& blocks, const StageSpan& span);

}  // namespace dtbench::models
