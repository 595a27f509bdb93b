#pragma once
// The device mesh of a layout, as torchtitan's ParallelDims: the world split
// into pipeline (pp), data-parallel (dp) and tensor-parallel (tp) degrees,
// pp outermost and tp innermost, so that rank = (pp_i · dp + dp_i) · tp +
// tp_i: a tensor-parallel group is tp consecutive ranks (inside a node
// whenever a node holds a multiple of tp ranks), a data-parallel group its
// ranks tp apart. Torch-free.
#include <string>
#include <vector>

namespace dtbench::layout {

enum class Dim { kPp, kDp, kTp };
std::string to_string(Dim d);  // "pp", "dp", "tp"

struct MeshCoords {
  int pp = 0, dp = 0, tp = 0;
};

struct ParallelDims {
  int pp = 1, dp = 1, tp = 1;

  // The mesh of `world` ranks with --tp and --pp: dp = world / (tp · pp).
  // Throws UsageError naming the numbers when tp or pp is below 1 or tp · pp
  // does not divide the world.
  static ParallelDims of_world(int world, int tp, int pp);

  int world() const { return pp * dp * tp; }
  int degree(Dim d) const;
  MeshCoords coords(int rank) const;
  // Every group along `d` (the ranks that differ only in that coordinate),
  // each in rank order, the groups in order of their first rank.
  std::vector<std::vector<int>> groups(Dim d) const;
  // The group along `d` that holds `rank`.
  std::vector<int> group_of(Dim d, int rank) const;
  // "dp 2 x tp 2" (degrees above 1 only; "dp 1" for one rank).
  std::string describe() const;
};

}  // namespace dtbench::layout
