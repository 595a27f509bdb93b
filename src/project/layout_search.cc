#include "project/layout_search.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::project {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

bool divisible(double n, int by) { return std::fmod(n, by) == 0; }

std::string limit_of(const ProjectionRow& r, double limit) {
  if (limit > 0 && r.memory.total() > 0.95 * limit) return "memory";
  const std::pair<double, const char*> parts[] = {{r.bubble_s, "bubble"},
                                                  {r.tp_comm_s, "TP communication"},
                                                  {r.pp_comm_s, "PP communication"},
                                                  {r.exposed_s, "DP communication"},
                                                  {r.recompute_s, "recomputation"}};
  const auto* most = std::max_element(std::begin(parts), std::end(parts),
                                      [](const auto& a, const auto& b) { return a.first < b.first; });
  return most->first > 0 ? most->second : "compute";
}

}  // namespace

std::string layout_name(const SearchResult& r) {
  return fmt::format("{} on dp {} x [{}]", strategy_name(r.options.strategy), r.row.dp, r.options.layout.describe());
}

ComputeProfile at_local_batch(const ComputeProfile& profile, std::int64_t batch) {
  ComputeProfile p = profile;
  if (batch == profile.batch_per_rank || profile.batch_per_rank < 1) return p;
  const double f = static_cast<double>(batch) / static_cast<double>(profile.batch_per_rank);
  p.batch_per_rank = batch;
  p.forward_s *= f;
  p.backward_s *= f;
  for (auto& g : p.grads) g.ready_s *= f;
  if (p.activation_bytes >= 0) p.activation_bytes *= f;
  p.measured.clear();
  p.one_rank.clear();
  return p;
}

SearchOutcome search_layouts(const ComputeProfile& profile, const ProjectOptions& base, const SearchOptions& s) {
  if (!profile.decoder)
    throw UsageError("--search lays out a decoder (gpt2, llama families: --model, or a --profile report of one)");
  if (!(s.memory_limit > 0)) throw UsageError("--search needs --memory-per-rank: the layouts that fit are ranked");
  if (s.world < 1) throw UsageError("--search needs one world size (--world-sizes N)");
  const DecoderShape& d = *profile.decoder;
  const int rpn = std::max(1, base.net.ranks_per_node);
  const int layers = static_cast<int>(d.layers);
  SearchOutcome out;
  std::vector<SearchResult> all;
  for (int tp : divisors(std::min(rpn, s.world))) {
    if (s.world % tp != 0 || !divisible(d.heads, tp) || !divisible(d.kv_heads, tp) || !divisible(d.ffn, tp))
      continue;
    for (int pp : divisors(s.world / tp)) {
      if (pp > layers) continue;
      const int dp = s.world / (tp * pp);
      std::int64_t local = profile.batch_per_rank;
      if (s.global_batch > 0) {
        if (s.global_batch % dp != 0) continue;
        local = s.global_batch / dp;
      }
      const auto p = at_local_batch(profile, local);
      struct Pipe {
        PpSchedule schedule;
        int v, m;
      };
      std::vector<Pipe> pipes;
      if (pp == 1) {
        pipes.push_back({PpSchedule::k1f1b, 1, 1});
      } else {
        // M = P, 2P, 4P, ... while it divides the local batch (and fits an int).
        for (std::int64_t m = pp; m <= local && m <= (std::int64_t{1} << 30); m *= 2) {
          if (local % m != 0) continue;
          pipes.push_back({PpSchedule::k1f1b, 1, static_cast<int>(m)});
          if (2 * pp <= layers) pipes.push_back({PpSchedule::kInterleaved1f1b, 2, static_cast<int>(m)});
        }
      }
      for (const auto& pipe : pipes)
        for (auto strategy : s.strategies)
          for (auto ac : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
            // DeepSpeed refuses ZeRO-2 under a pipeline (layout_projection.cc).
            if (strategy == Strategy::kZero2 && pp > 1) continue;
            ProjectOptions o = base;
            o.strategy = strategy;
            o.world_sizes = {s.world};
            o.memory_limit = s.memory_limit;
            auto& l = o.layout;
            const double bytes = l.activation_bytes;
            const bool flash = l.flash_attention;
            l = LayoutOptions{};
            l.activation_bytes = bytes;
            l.flash_attention = flash;
            l.tp = tp;
            l.pp = pp;
            l.schedule = pipe.schedule;
            l.stages_per_rank = pipe.v;
            l.microbatches = pipe.m;
            l.sequence_parallel = tp > 1;
            // Loss parallel where the vocabulary splits (GPT-2's 50,257 does
            // not: its head stays replicated).
            l.loss_parallel = tp > 1 && divisible(d.vocab, tp);
            l.recompute = ac;
            if (strategy == Strategy::kFsdp && pp > 1) o.memory.reshard_after_forward = false;
            SearchResult r;
            r.options = o;
            r.local_batch = local;
            r.row = project(p, o).front();
            r.limited_by = limit_of(r.row, s.memory_limit);
            ++out.candidates;
            all.push_back(r);
          }
    }
  }
  std::vector<SearchResult> fit;
  for (const auto& r : all)
    if (r.row.memory.total() <= s.memory_limit) fit.push_back(r);
  out.fitting = static_cast<int>(fit.size());
  std::stable_sort(fit.begin(), fit.end(), [](const SearchResult& a, const SearchResult& b) {
    return a.row.tokens_per_s_per_rank > b.row.tokens_per_s_per_rank;
  });
  if (static_cast<int>(fit.size()) > s.top) fit.resize(static_cast<std::size_t>(s.top));
  out.best = fit;
  if (out.best.empty() && !all.empty()) {
    const auto least = std::min_element(all.begin(), all.end(), [](const SearchResult& a, const SearchResult& b) {
      return a.row.memory.total() < b.row.memory.total();
    });
    out.smallest = {*least};
  }
  return out;
}

}  // namespace dtbench::project
