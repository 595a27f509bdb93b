#pragma once
// Memory per rank of a data-parallel strategy at N ranks, for `dtbench
// project` (docs/metrics.md "Projection: sharded strategies"): the model
// states from ZeRO's formulas (float32 parameters and gradients, K float32
// optimizer states per parameter: (8 + 4K)Ψ replicated, 8Ψ + 4KΨ/N ZeRO-1,
// 4Ψ + (4 + 4K)Ψ/N ZeRO-2, (8 + 4K)Ψ/N FSDP, as train_options'
// expected_model_state_bytes), plus what each holds beside them: DDP's
// bucket copies of the gradients, Horovod's fusion buffer, ZeRO's averaged shard or buckets in
// flight, FSDP's gathered units (the root, kept gathered, and two blocks —
// the one computing and the one prefetched — in the parameter dtype, with
// their unsharded float32 gradients in backward), and the activations of the
// profiled batch. Pure; torch-free.
#include <algorithm>
#include <cstdint>

#include "project/strategies.h"

namespace dtbench::project {

struct MemoryOptions {
  int optimizer_states = 1;     // K: SGD with momentum 1 (0 without), AdamW 2
  double param_bytes = 4;       // fsdp: bytes per element of a gathered unit (FSDP2's param_dtype bf16: 2)
  bool reshard_after_forward = true;       // fsdp: units freed after their forward (FSDP2's default)
  // ZeRO-2's gradient buckets; 0 in ProjectOptions: the profile's (or the
  // re-bucketing) cap.
  double bucket_cap_bytes = 25.0 * 1024 * 1024;
  // zero2: the most two buckets adjacent in launch order hold together (a
  // bucket filling while the one before reduces, shard_buckets.h), from the
  // projection's bucket list: a bucket never splits a tensor, so a tensor
  // above the cap is a bucket of its own (llama3-8b's 2.1 GB head). 0: two
  // caps.
  double zero2_live_bucket_bytes = 0;
  double fusion_buffer_bytes = 128.0 * 1024 * 1024;  // horovod: the fusion threshold
  // fsdp under a pipeline of microbatches: PyTorch's pipelining stage turns
  // FSDP2's gradient sync off for every microbatch but the last
  // (set_requires_gradient_sync), so every unit's unsharded gradient,
  // accumulated in float32 (the reduce dtype), lives until the last
  // microbatch's reduce-scatter.
  bool accumulate_unsharded = false;
};

// FSDP's units by size (elements): the root (embeddings, final norm, head:
// gathered first and kept gathered through forward and backward, as FSDP2
// and dtbench's fsdp keep it) and the largest of the others (blocks).
struct FsdpUnitSizes {
  double root = 0;
  double block = 0;
};

struct MemoryFigures {
  double parameters = 0, gradients = 0, optimizer = 0;  // the model states a rank keeps
  double gathered = 0;     // fsdp: unsharded units at the peak (parameters and gradients)
  double buffers = 0;      // communication buffers beside the model states
  // Of those, the ones that outlive backward and stay with every model state
  // through the step: ddp's bucket copies (c10d's Reducer allocates them
  // once and keeps them), horovod's fusion buffer, zero1's averaged shard
  // (the gradient its step reads). 0 for buffers that exist only while
  // backward runs (zero2's buckets in flight, fsdp's units).
  double kept_buffers = 0;
  // What the optimizer's step allocates while it runs: AdamW's sqrt(v), 4
  // bytes per element the rank steps (torch.optim.AdamW's foreach
  // _foreach_sqrt, dtbench's train/adamw.cc); SGD steps in place.
  double step_temporaries = 0;
  double activations = 0;  // the profiled batch's (scaled to the batch asked for)
  // Model-state bytes a rank does not hold yet at the backward's peak (its
  // start): the gradients zero_grad sets to none and backward makes again
  // as it frees activations — ddp's and horovod's (their buckets and fusion
  // buffer stay), fsdp's gradient shards, which each unit's reduce-scatter
  // makes (as FSDP2's under zero_grad(set_to_none=True)), zero2's gradient
  // shards, made by each bucket's reduction (DeepSpeed's stage 2); 0 for
  // zero1, whose gradients are its buckets' views, zeroed in place.
  double made_in_backward = 0;
  double model_states() const { return parameters + gradients + optimizer; }
  // The backward's peak without the activations: model states held then,
  // the gathered units and the buffers.
  double beside_activations() const { return model_states() - made_in_backward + gathered + buffers; }
  // After backward, through the optimizer's step: every model state, the
  // buffers kept and the step's temporaries.
  double after_backward() const { return model_states() + kept_buffers + step_temporaries; }
  // The peak: during backward, or in the step after it with every model
  // state (ddp and horovod with small activations: their buffers stay and
  // AdamW adds 4 bytes per element; fsdp when its gradient shards outweigh
  // what backward adds).
  double total() const { return std::max(after_backward(), beside_activations() + activations); }
};

// `parameters`: Ψ elements; `units`: FSDP's root and largest block (fsdp
// only); `activation_bytes`: one rank's activations.
MemoryFigures memory_per_rank(Strategy s, double parameters, const FsdpUnitSizes& units, int world,
                              const MemoryOptions& o, double activation_bytes);

// The most examples per rank that fit in `limit` bytes when `at_batch`'s
// activations scale with the batch: floor((limit - the rest) / activations
// per example); 0 when not even one fits; -1 without an activation figure.
std::int64_t largest_batch(const MemoryFigures& at_batch, std::int64_t batch, double limit);

}  // namespace dtbench::project
