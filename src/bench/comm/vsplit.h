#pragma once
// The uneven parts of alltoallv, allgatherv and reduce_scatter_v
// (`--split-sizes`): how many elements rank i sends rank j, each rank sending
// `count` in all (alltoallv), or rank i's part of `count` (the v-collectives). "uniform": count / n each
// (the remainder to the rank itself); "skewed": in proportion to
// 1 + (i + j) mod n, so some pairs move n times what others do; "random" or
// "random:SEED": weights 1-8 drawn from the seed (the run's when none is
// given), the same on every rank. Pure and torch-free.
#include <cstdint>
#include <string>
#include <vector>

namespace dtbench::bench {

struct VSplit {
  enum class Kind { kUniform, kSkewed, kRandom };
  Kind kind = Kind::kUniform;
  std::uint64_t seed = 0;  // kRandom: 0 = the run's data seed
  std::string text = "uniform";
};

// Throws UsageError naming --split-sizes for anything else.
VSplit parse_vsplit(const std::string& text);

// [i][j]: elements rank i sends rank j; every row sums to `count`.
// `run_seed` stands in for a kRandom spec without its own seed.
std::vector<std::vector<std::int64_t>> vsplit_matrix(const VSplit& spec, int nranks, std::int64_t count,
                                                     std::uint64_t run_seed);

// Rank i's part of `count` (allgatherv's contribution, reduce_scatter_v's
// share): in proportion to 1 for "uniform", 1 + i for "skewed" (the last
// rank's part n times the first's), 1-8 from the seed for "random"; the
// parts sum to `count` (the rounding's remainder to the last rank).
std::vector<std::int64_t> vsplit_counts(const VSplit& spec, int nranks, std::int64_t count, std::uint64_t run_seed);

}  // namespace dtbench::bench
