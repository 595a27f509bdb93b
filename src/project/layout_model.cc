#include "project/layout_model.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::project {

std::string LayoutOptions::describe() const {
  std::string out;
  auto add = [&out](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (cp > 1) add(fmt::format("cp {}", cp));
  if (tp > 1) add(fmt::format("tp {}", tp));
  if (pp > 1) {
    std::string p = fmt::format("pp {} {}", pp, pp_schedule_name(schedule));
    if (schedule == PpSchedule::kInterleaved1f1b) p += fmt::format(" v{}", stages_per_rank);
    add(p + fmt::format(" M{}", microbatches));
  }
  if (sequence_parallel) add("SP");
  if (loss_parallel) add("loss parallel");
  if (recompute != Recompute::kNone) add(fmt::format("{} AC", recompute_name(recompute)));
  return out.empty() ? "no model parallelism" : out;
}

BlockActivations block_activations(const DecoderShape& d, double e, bool flash, bool dropout) {
  const double h = d.hidden;
  BlockActivations a;
  a.replicated = 4 * h * e;
  a.split = (3 * h + h + (d.swiglu ? 4 : 2) * d.ffn) * e;
  a.core = flash ? 0 : d.heads * d.seq * e;
  if (dropout) {  // Korthikanti's GPT: two masks of h bytes, the attention's mask and dropped probabilities
    a.replicated += 2 * h;
    a.core += d.heads * d.seq * (1 + e);
  }
  return a;
}

double kept_per_token(const BlockActivations& a, const DecoderShape& d, const LayoutOptions& l) {
  const double t = l.tp;
  switch (l.recompute) {
    case Recompute::kFull: return d.hidden * l.activation_bytes / (l.sequence_parallel ? t : 1);
    case Recompute::kSelective:
      return l.sequence_parallel ? (a.replicated + a.split) / t : a.replicated + a.split / t;
    case Recompute::kNone: break;
  }
  return l.sequence_parallel ? (a.replicated + a.split + a.core) / t : a.replicated + (a.split + a.core) / t;
}

double microbatches_in_flight(const LayoutOptions& l, int rank) {
  const int p = l.pp, m = l.microbatches, v = l.stages_per_rank;
  if (p <= 1) return 1;
  switch (l.schedule) {
    case PpSchedule::kGpipe: return m;
    case PpSchedule::k1f1b: return std::min(m, p - rank);
    case PpSchedule::kInterleaved1f1b: {
      // Megatron-LM runs every forward first when M = P.
      const int chunks = m == p ? v * m : std::min(v * m, 2 * (p - rank - 1) + (v - 1) * p + 1);
      return static_cast<double>(chunks) / v;
    }
  }
  return m;
}

double pipeline_slots(const LayoutOptions& l) {
  if (l.pp <= 1) return l.microbatches;
  const double v = l.schedule == PpSchedule::kInterleaved1f1b ? l.stages_per_rank : 1;
  return l.microbatches + (l.pp - 1) / v;
}

double bubble_fraction(const LayoutOptions& l) {
  if (l.pp <= 1) return 0;
  return (pipeline_slots(l) - l.microbatches) / pipeline_slots(l);
}

void check_layout(const LayoutOptions& l, const DecoderShape* d, long long local_batch) {
  if (l.tp < 1 || l.pp < 1 || l.cp < 1) throw UsageError("--tp, --pp and --cp must be at least 1");
  if (l.microbatches < 1 || l.stages_per_rank < 1)
    throw UsageError("--microbatches and --stages-per-rank must be at least 1");
  if (l.pp == 1 && l.microbatches > 1)
    throw UsageError(fmt::format("--microbatches {}: microbatches feed a pipeline; give --pp", l.microbatches));
  if (l.stages_per_rank > 1 && l.schedule != PpSchedule::kInterleaved1f1b)
    throw UsageError(fmt::format("--stages-per-rank {}: several stages per rank need --pp-schedule interleaved-1f1b",
                                 l.stages_per_rank));
  if (l.pp > 1 && local_batch % l.microbatches != 0)
    throw UsageError(fmt::format("--microbatches {} does not divide the local batch of {}", l.microbatches,
                                 local_batch));
  if (l.pp > 1 && l.schedule == PpSchedule::kInterleaved1f1b && l.microbatches % l.pp != 0)
    throw UsageError(fmt::format("--pp-schedule interleaved-1f1b: --microbatches {} is not a multiple of --pp {} "
                                 "(Megatron-LM's and PyTorch's interleaved schedules need it)",
                                 l.microbatches, l.pp));
  const bool model_parallel = l.tp > 1 || l.pp > 1 || l.cp > 1 || l.sequence_parallel || l.loss_parallel;
  if (d == nullptr) {
    if (model_parallel || l.recompute != Recompute::kNone)
      throw UsageError("--tp, --pp, --cp, --sequence-parallel, --loss-parallel and --activation-checkpointing project "
                       "a decoder's layout (gpt2, llama families: --model, or a --profile report of one)");
    return;
  }
  if (std::fmod(d->seq, 2.0 * l.cp) != 0 && l.cp > 1)
    throw UsageError(fmt::format("--cp {}: the sequence of {} tokens does not split into 2 x {} balanced chunks",
                                 l.cp, d->seq, l.cp));
  if (l.sequence_parallel && l.tp == 1) throw UsageError("--sequence-parallel shards along the TP group: give --tp");
  if (l.loss_parallel && l.tp == 1) throw UsageError("--loss-parallel splits the head over the TP group: give --tp");
  const double chunks = static_cast<double>(l.pp) * l.stages_per_rank;
  if (chunks > d->layers)
    throw UsageError(fmt::format("--pp {} x --stages-per-rank {} is more stages than the model's {} blocks", l.pp,
                                 l.stages_per_rank, d->layers));
  const double kv = d->kv_heads > 0 ? d->kv_heads : d->heads;
  auto divides = [&](double n, const char* what) {
    if (std::fmod(n, l.tp) != 0)
      throw UsageError(fmt::format("--tp {}: the model's {} {} are not divisible by it", l.tp, n, what));
  };
  divides(d->heads, "heads");
  divides(kv, "key/value heads");
  divides(d->ffn, "MLP hidden units");
  if (l.loss_parallel) divides(d->vocab, "vocabulary entries");
}

}  // namespace dtbench::project
