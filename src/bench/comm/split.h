#pragma once
// Splitting the job into groups that each run the collective at once, as
// nccl-tests' NCCL_TESTS_SPLIT: "mod:N" (colour = rank mod N: one rank from
// each run of N, e.g. the same GPU index on every node), "div:N" (colour =
// rank div N: runs of N consecutive ranks, e.g. each node's GPUs), "and:MASK"
// (colour = rank & MASK, MASK decimal or 0x hex). Ranks of one colour form a
// group, numbered in rank order. Or, with --groups, the groups of one
// dimension of a layout's device mesh (layout/parallel_dims.h: pp outermost,
// tp innermost, as `dtbench train`): "tp=2" the tensor-parallel groups of
// 2 consecutive ranks, "dp,tp=2" the data-parallel groups of that mesh.
// Pure and torch-free.
#include <string>
#include <vector>

#include "layout/parallel_dims.h"

namespace dtbench::bench {

struct SplitSpec {
  enum class Kind { kNone, kMod, kDiv, kAnd, kMesh };
  Kind kind = Kind::kNone;
  long long value = 0;
  std::string text;  // as given ("" for none)
  // kMesh: the dimension whose groups run, and the degrees given (0: not
  // given; tp and pp default to 1, dp to the ranks left).
  layout::Dim dim = layout::Dim::kDp;
  int tp = 0, pp = 0, dp = 0;
};

// "" -> none. Throws UsageError naming --split for anything else malformed
// (an unknown form, N < 1, a negative mask).
SplitSpec parse_split(const std::string& text);

// --groups: "DIM[=K][,DIM=K...]" over tp, dp and pp; the first names the
// dimension whose groups run, each =K a degree of the mesh. Throws
// UsageError naming --groups for an unknown or repeated dimension, or a
// degree below 1.
SplitSpec parse_groups(const std::string& text);

// How the split was asked for: "--split mod:2", "--groups tp=2".
std::string describe_split(const SplitSpec& spec);

// The colour of `rank`; 0 for every rank without a split. mod, div and and
// only (a mesh's groups depend on the world size: split_groups).
long long split_colour(const SplitSpec& spec, int rank);

// The groups of a `world_size`-rank job: each a list of ranks in rank order,
// ordered by their lowest rank. A mesh whose degrees do not fit the world
// throws UsageError naming --groups.
std::vector<std::vector<int>> split_groups(const SplitSpec& spec, int world_size);

}  // namespace dtbench::bench
