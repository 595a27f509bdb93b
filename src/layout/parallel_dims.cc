#include "layout/parallel_dims.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::layout {

std::string to_string(Dim d) {
  switch (d) {
    case Dim::kPp:
      return "pp";
    case Dim::kDp:
      return "dp";
    case Dim::kTp:
      return "tp";
  }
  return "?";
}

ParallelDims ParallelDims::of_world(int world, int tp, int pp) {
  if (tp < 1) throw UsageError(fmt::format("--tp {} must be at least 1", tp));
  if (pp < 1) throw UsageError(fmt::format("--pp {} must be at least 1", pp));
  if (world % (tp * pp) != 0)
    throw UsageError(fmt::format("--tp {} x --pp {} = {} does not divide the {} ranks into data-parallel replicas",
                                 tp, pp, tp * pp, world));
  ParallelDims d;
  d.tp = tp;
  d.pp = pp;
  d.dp = world / (tp * pp);
  return d;
}

int ParallelDims::degree(Dim d) const {
  switch (d) {
    case Dim::kPp:
      return pp;
    case Dim::kDp:
      return dp;
    case Dim::kTp:
      return tp;
  }
  return 1;
}

MeshCoords ParallelDims::coords(int rank) const {
  DTBENCH_CHECK(rank >= 0 && rank < world(), "rank outside the mesh");
  MeshCoords c;
  c.tp = rank % tp;
  c.dp = (rank / tp) % dp;
  c.pp = rank / (tp * dp);
  return c;
}

std::vector<int> ParallelDims::group_of(Dim d, int rank) const {
  const MeshCoords c = coords(rank);
  std::vector<int> out;
  for (int i = 0; i < degree(d); ++i) {
    MeshCoords m = c;
    (d == Dim::kPp ? m.pp : d == Dim::kDp ? m.dp : m.tp) = i;
    out.push_back((m.pp * dp + m.dp) * tp + m.tp);
  }
  return out;
}

std::vector<std::vector<int>> ParallelDims::groups(Dim d) const {
  std::vector<std::vector<int>> out;
  for (int r = 0; r < world(); ++r) {
    auto g = group_of(d, r);
    if (g.front() == r) out.push_back(std::move(g));
  }
  return out;
}

std::string ParallelDims::describe() const {
  std::string s;
  for (Dim d : {Dim::kPp, Dim::kDp, Dim::kTp}) {
    if (degree(d) == 1) continue;
    s += fmt::format("{}{} {}", s.empty() ? "" : " x ", to_string(d), degree(d));
  }
  return s.empty() ? "dp 1" : s;
}

}  // namespace dtbench::layout
