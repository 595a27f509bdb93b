#include "layout/pipeline_schedule.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::layout {

const char* pp_schedule_name(PpSchedule s) {
  switch (s) {
    case PpSchedule::kGpipe: return "gpipe";
    case PpSchedule::k1f1b: return "1f1b";
    case PpSchedule::kInterleaved1f1b: return "interleaved-1f1b";
  }
  return "?";
}

PpSchedule parse_pp_schedule(const std::string& text) {
  for (auto s : {PpSchedule::kGpipe, PpSchedule::k1f1b, PpSchedule::kInterleaved1f1b})
    if (text == pp_schedule_name(s)) return s;
  throw UsageError(fmt::format("--pp-schedule: '{}' is not a schedule (use gpipe, 1f1b or interleaved-1f1b)", text));
}

std::string pipeline_refusal(PpSchedule s, int stages, int microbatches, int chunks, long long batch,
                             long long blocks) {
  if (microbatches < 1) return fmt::format("--microbatches {} must be at least 1", microbatches);
  if (batch % microbatches != 0)
    return fmt::format("--microbatches {} does not divide the batch of {} examples per replica", microbatches,
                       batch);
  if (s == PpSchedule::kInterleaved1f1b) {
    if (chunks < 2)
      return fmt::format("--pp-schedule interleaved-1f1b holds several stages per rank: give --stages-per-rank 2 "
                         "or more (now {})", chunks);
    if (microbatches % stages != 0)
      return fmt::format("--pp-schedule interleaved-1f1b sends microbatches in groups of --pp {}: --microbatches {} "
                         "is not a multiple of it (Megatron-LM's rule)", stages, microbatches);
  } else if (chunks != 1) {
    return fmt::format("--stages-per-rank {} is interleaved-1f1b's; --pp-schedule {} holds one stage per rank",
                       chunks, pp_schedule_name(s));
  }
  if (blocks >= 0 && static_cast<long long>(stages) * chunks > blocks)
    return fmt::format("--pp {}{} makes {} stages, more than the model's {} blocks", stages,
                       chunks > 1 ? fmt::format(" x --stages-per-rank {}", chunks) : "", stages * chunks, blocks);
  return "";
}

std::vector<PpAction> pipeline_actions(PpSchedule s, int stages, int rank, int microbatches, int chunks) {
  DTBENCH_CHECK(stages >= 1 && rank >= 0 && rank < stages, "pipeline rank outside the pipeline");
  const auto why = pipeline_refusal(s, stages, microbatches, chunks, microbatches, -1);
  if (!why.empty()) throw UsageError(why);
  const int m = microbatches, p = stages;
  std::vector<PpAction> out;
  auto f = [&out](int mb, int c) { out.push_back({PpAction::kForward, mb, c}); };
  auto b = [&out](int mb, int c) { out.push_back({PpAction::kBackward, mb, c}); };
  switch (s) {
    case PpSchedule::kGpipe:
      for (int i = 0; i < m; ++i) f(i, 0);
      for (int i = 0; i < m; ++i) b(i, 0);
      break;
    case PpSchedule::k1f1b: {
      const int warmup = std::min(p - rank - 1, m);
      for (int i = 0; i < warmup; ++i) f(i, 0);
      for (int i = 0; i + warmup < m; ++i) {
        f(i + warmup, 0);
        b(i, 0);
      }
      for (int i = m - warmup; i < m; ++i) b(i, 0);
      break;
    }
    case PpSchedule::kInterleaved1f1b: {
      // Megatron-LM's forward_backward_pipelining_with_interleaving: the
      // k-th forward runs chunk (k mod Pv) / P on microbatch
      // (k / Pv)·P + k mod P; the k-th backward the chunks in reverse.
      const int v = chunks, total = v * m, group = p * v;
      auto mb = [&](int k) { return (k / group) * p + k % p; };
      auto chunk_f = [&](int k) { return (k % group) / p; };
      auto chunk_b = [&](int k) { return v - 1 - (k % group) / p; };
      const int warmup = m == p ? total : std::min(total, 2 * (p - rank - 1) + (v - 1) * p);
      for (int k = 0; k < warmup; ++k) f(mb(k), chunk_f(k));
      for (int k = 0; k + warmup < total; ++k) {
        f(mb(k + warmup), chunk_f(k + warmup));
        b(mb(k), chunk_b(k));
      }
      for (int k = total - warmup; k < total; ++k) b(mb(k), chunk_b(k));
      break;
    }
  }
  return out;
}

int peak_in_flight(const std::vector<PpAction>& actions) {
  int now = 0, peak = 0;
  for (const auto& a : actions) {
    now += a.kind == PpAction::kForward ? 1 : -1;
    peak = std::max(peak, now);
  }
  return peak;
}

double schedule_bubble(int stages, int microbatches, int chunks) {
  if (stages <= 1) return 0;
  return static_cast<double>(stages - 1) / (static_cast<double>(chunks) * microbatches + stages - 1);
}

std::vector<int> stage_blocks(int layers, int stages) {
  const int p = std::max(1, stages);
  std::vector<int> out(static_cast<std::size_t>(p), layers / p);
  for (int i = 0; i < layers % p; ++i) ++out[static_cast<std::size_t>(i)];
  return out;
}

}  // namespace dtbench::layout
