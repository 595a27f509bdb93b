#pragma once
// A layout's own figures for `dtbench project` (docs/metrics.md
// "Projection: layouts"): how a decoder's blocks split into pipeline
// stages, how many microbatches each stage holds in flight under its
// schedule, the pipeline's bubble, and the activations one block keeps per
// token by Korthikanti et al. 2022 ("Reducing Activation Recomputation in
// Large Transformer Models", section 4) for the two decoder families dtbench
// trains, under tensor parallelism, sequence parallelism and activation
// recomputation. Pure; torch-free.
#include <string>
#include <vector>

#include "layout/pipeline_schedule.h"
#include "layout/recompute.h"

namespace dtbench::project {

// The pipeline schedules `dtbench train` runs (layout/pipeline_schedule.h).
using layout::PpSchedule;
using layout::pp_schedule_name;
using layout::parse_pp_schedule;
using layout::stage_blocks;

// --activation-checkpointing as `dtbench train` runs it (layout/recompute.h).
using layout::Recompute;
using layout::recompute_name;

struct LayoutOptions {
  int tp = 1, pp = 1;
  // Context parallelism: each sequence split over cp ranks (torchtitan's
  // ring attention: keys and values passed around the group, overlapped
  // with the attention core); the data-parallel strategy shards over dp x cp.
  int cp = 1;
  PpSchedule schedule = PpSchedule::k1f1b;
  int microbatches = 1;     // M: the local batch split into M pipeline microbatches
  int stages_per_rank = 1;  // v: interleaved-1f1b's model chunks per rank
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  // The LM head and its loss split by vocabulary over the TP group
  // (torchtitan's loss_parallel, with the embedding row-wise); false: the
  // head, the embedding and the logits replicated (dtbench train --tp).
  bool loss_parallel = false;
  // The attention core keeps the softmax probabilities (eager: dtbench's own
  // models, Korthikanti's count) or not (flash: SDPA's fused kernels keep
  // the output and a log-sum-exp per row, torchtitan on a GPU).
  bool flash_attention = false;
  double activation_bytes = 4;  // bytes per activation element: 2 under bf16/fp16, 4 in float32

  bool is_default() const {
    return tp == 1 && pp == 1 && cp == 1 && microbatches == 1 && !sequence_parallel && recompute == Recompute::kNone;
  }
  // "tp 8 x pp 8 interleaved-1f1b v2 M16, SP, full AC" (degrees above 1 and
  // what is set only).
  std::string describe() const;
};

// A decoder's shape (gpt2 and llama families).
struct DecoderShape {
  bool swiglu = false;  // llama: SwiGLU MLP (gate, up, down), RMSNorm, grouped-query attention
  double layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, seq = 0;
};

// What one block keeps for backward, in bytes per token of its input
// (Korthikanti's per-layer figure divided by s·b), with dropout nowhere (no
// dtbench or torchtitan decoder has it). The three parts split differently
// under tensor parallelism:
//   replicated: the norms' inputs and the inputs of the column-parallel
//     projections (4h elements), whole on every TP rank unless sequence
//     parallel shards them;
//   split: q, k and v (3h: grouped-query attention repeats k and v to every
//     head before the attention reads them, so both count h), the output
//     projection's input (h) and the MLP's (GPT-2: GELU's input and the
//     down projection's, 2f; SwiGLU: gate, up, silu and their product, 4f);
//   core: the attention probabilities, a·s per token (eager; flash keeps
//     none).
// With `dropout` (Korthikanti's GPT) add its masks, a byte each: two of h
// (replicated) and the attention's a·s, plus the dropped probabilities:
// their sbh(34 + 5as/h) at 2 bytes an element.
struct BlockActivations {
  double replicated = 0, split = 0, core = 0;  // bytes per token
};
BlockActivations block_activations(const DecoderShape& d, double element_bytes, bool flash, bool dropout = false);

// Bytes per token one block keeps under the layout: none: replicated +
// (split + core)/t, all /t with SP; selective: the core recomputed, not
// kept; full: the block's input, h elements (/t with SP).
double kept_per_token(const BlockActivations& a, const DecoderShape& d, const LayoutOptions& l);

// Microbatches' worth of a stage's activations that pipeline rank `rank`
// holds at its peak: GPipe M; 1F1B min(M, P - rank); interleaved 1F1B
// (Megatron-LM's warm-up count) min(vM, 2(P - rank - 1) + (v - 1)P + 1)
// chunks, each 1/v of the rank's layers (all vM when M = P: Megatron then
// runs every forward first): rank 0 holds L(1 + (P-1)/(vP)) layers' worth,
// Korthikanti's figure. Equal to the peak of layout::pipeline_actions'
// order (unit test).
double microbatches_in_flight(const LayoutOptions& l, int rank);

// The pipeline's bubble, the idle share of a rank's step: (P-1)/(vM + P-1)
// for interleaved (v = 1: GPipe and 1F1B); 0 without a pipeline.
double bubble_fraction(const LayoutOptions& l);

// Microbatch slots a rank's pipeline step lasts, in units of one
// microbatch's work on all of the rank's stages: M + (P - 1)/v.
double pipeline_slots(const LayoutOptions& l);

// Throws UsageError (one line) for what the layout cannot take: degrees
// below 1, a sequence not divisible by 2 x cp (ring attention's balanced
// halves), microbatches without a pipeline or not dividing the local batch, interleaving without its schedule or
// with more chunks than blocks, more stages than blocks, heads, kv-heads,
// the MLP's width or (loss_parallel) the vocabulary not divisible by tp.
void check_layout(const LayoutOptions& l, const DecoderShape* d, long long local_batch);

}  // namespace dtbench::project
