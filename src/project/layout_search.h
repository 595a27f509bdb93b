#pragma once
// `dtbench project --search`: every layout of a world of ranks for a decoder
// (tp over the divisors of a node's ranks, pp, the data-parallel strategy,
// recomputation, schedule, microbatches), projected (layout_projection.cc),
// those over the memory limit dropped, the rest ranked by tokens/s per rank
// (docs/metrics.md "Projection: layouts", "The search"). Pure; torch-free.
#include <cstdint>
#include <string>
#include <vector>

#include "project/projection.h"

namespace dtbench::project {

struct SearchOptions {
  int world = 0;
  double memory_limit = 0;          // bytes per rank
  std::int64_t global_batch = 0;    // > 0: the batch of the whole job (each layout's local batch = this / dp)
  std::vector<Strategy> strategies;
  int top = 10;
};

struct SearchResult {
  ProjectOptions options;  // the layout and strategy
  ProjectionRow row;
  std::int64_t local_batch = 0;
  // What limits it most: "bubble", "TP communication", "PP communication",
  // "DP communication", "recomputation" (the largest of those times) or
  // "memory" (within 5 % of the limit).
  std::string limited_by;
};

struct SearchOutcome {
  int candidates = 0;              // layouts projected
  std::vector<SearchResult> best;  // those that fit, best first (at most `top`)
  int fitting = 0;
  // Where none fits: the layout needing the least memory.
  std::vector<SearchResult> smallest;
};

// The layouts searched, in the order tried (every tp dividing the node's
// ranks and the model's heads, key/value heads, MLP and vocabulary; pp
// dividing world / tp up to the blocks; 1F1B and interleaved 1F1B with two
// stages per rank where the blocks allow; microbatches from P up to the
// local batch, powers of two times P that divide it; none, selective and
// full recomputation; SP on with tp > 1, loss parallel too where the
// vocabulary divides by tp; fsdp without resharding under a pipeline, zero2
// not under one).
SearchOutcome search_layouts(const ComputeProfile& profile, const ProjectOptions& base, const SearchOptions& s);

// "zero2 on dp 32 x [tp 4, pp 2 1f1b M16, SP, loss parallel]".
std::string layout_name(const SearchResult& r);

// `profile` at another local batch: forward, backward, ready marks and a
// stated activation figure in proportion (the optimizer's step and the
// gradients do not change).
ComputeProfile at_local_batch(const ComputeProfile& profile, std::int64_t batch);

}  // namespace dtbench::project
