#pragma once
// Splitting the job into groups that each run the collective at once, as
// nccl-tests' NCCL_TESTS_SPLIT: "mod:N" (colour = rank mod N: one rank from
// each run of N, e.g. the same GPU index on every node), "div:N" (colour =
// rank div N: runs of N consecutive ranks, e.g. each node's GPUs), "and:MASK"
// (colour = rank & MASK, MASK decimal or 0x hex). Ranks of one colour form a
// group, numbered in rank order. Pure and torch-free.
#include <string>
#include <vector>

namespace dtbench::bench {

struct SplitSpec {
  enum class Kind { kNone, kMod, kDiv, kAnd };
  Kind kind = Kind::kNone;
  long long value = 0;
  std::string text;  // as given ("" for none)
};

// "" -> none. Throws UsageError naming --split for anything else malformed
// (an unknown form, N < 1, a negative mask).
SplitSpec parse_split(const std::string& text);

// The colour of `rank`; 0 for every rank without a split.
long long split_colour(const SplitSpec& spec, int rank);

// The groups of a `world_size`-rank job: each a list of ranks in rank order,
// ordered by their lowest rank.
std::vector<std::vector<int>> split_groups(const SplitSpec& spec, int world_size);

}  // namespace dtbench::bench
