#pragma once
// Pipeline schedules as data, as torch.distributed.pipelining writes them:
// each pipeline rank's ordered list of actions (a forward or a backward of
// one microbatch on one of its stages), which the trainer's pipeline
// (train/pipeline.h) runs, the projection (project/layout_model.h) costs
// and the tests read. A rank of an interleaved schedule holds v stages
// (model chunks): stage s = chunk · P + rank, Megatron-LM's virtual
// pipeline. Torch-free.
#include <string>
#include <vector>

namespace dtbench::layout {

// torch.distributed.pipelining's ScheduleGPipe, Schedule1F1B and
// ScheduleInterleaved1F1B (Megatron-LM's interleaved order).
enum class PpSchedule { kGpipe, k1f1b, kInterleaved1f1b };
const char* pp_schedule_name(PpSchedule s);
// "gpipe", "1f1b" or "interleaved-1f1b"; throws UsageError naming them.
PpSchedule parse_pp_schedule(const std::string& text);

struct PpAction {
  enum Kind { kForward, kBackward };
  Kind kind = kForward;
  int microbatch = 0;
  int chunk = 0;  // which of the rank's stages: stage chunk · P + rank
  bool operator==(const PpAction& o) const {
    return kind == o.kind && microbatch == o.microbatch && chunk == o.chunk;
  }
};

// Pipeline rank `rank`'s actions of one step, `stages` ranks (P), M
// microbatches, v chunks per rank:
//  gpipe: every microbatch's forward, then every backward (M in flight);
//  1f1b: P − rank − 1 warm-up forwards, then one forward and one backward
//    alternating, then the remaining backwards (at most P − rank in flight);
//  interleaved-1f1b (v ≥ 2, M a multiple of P): Megatron-LM's order, the
//    microbatches in groups of P per chunk, 2(P − rank − 1) + (v − 1)P
//    warm-up forwards.
// Throws UsageError where the schedule cannot take the numbers (refusal).
std::vector<PpAction> pipeline_actions(PpSchedule s, int stages, int rank, int microbatches, int chunks);

// Why these numbers cannot make a pipeline ("" when they can): microbatches
// below 1 or not dividing the local batch, interleaving without v ≥ 2 or
// with M not a multiple of P, v without interleaving, more stages (P · v)
// than blocks.
std::string pipeline_refusal(PpSchedule s, int stages, int microbatches, int chunks, long long batch,
                             long long blocks);

// Most microbatches whose activations `actions` hold at once (forwards not
// yet matched by their backward), counted per chunk.
int peak_in_flight(const std::vector<PpAction>& actions);

// The schedule's bubble, the idle share of a rank's step when every
// microbatch costs the same on every stage and sending is free:
// (P − 1)/(vM + P − 1) (v = 1 for gpipe and 1f1b).
double schedule_bubble(int stages, int microbatches, int chunks);

// Blocks per stage: `layers` split as evenly as they go, the earlier stages
// taking the remainder (the last holds the head). Balanced by parameters
// and FLOPs alike where the blocks are equal (a decoder's are); the
// embedding goes with the first stage, the head with the last.
std::vector<int> stage_blocks(int layers, int stages);

}  // namespace dtbench::layout
