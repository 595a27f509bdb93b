#pragma once
// Small helpers shared by the collective rows.
#include <ATen/ATen.h>

#include "bench/comm/collective.h"
#include "bench/comm/data.h"

namespace dtbench::bench {

inline DataSpec data_spec(const CollArgs& a, bool reduction) {
  return DataSpec{a.dtype, a.op, reduction, a.nranks, a.device, a.seed};
}
inline std::int64_t whole(const CollArgs& a) { return a.count; }
inline std::int64_t per_rank(const CollArgs& a) { return a.count / a.nranks; }
// The v-collectives' parts: the ones made for this size, or made here.
inline std::vector<std::int64_t> rank_parts(const CollArgs& a) {
  if (a.vcounts) return *a.vcounts;
  return vsplit_counts(a.vsplit, a.nranks, a.count, a.vsplit.seed);
}
inline std::int64_t rank_part(const CollArgs& a, int rank) {
  return rank_parts(a)[static_cast<std::size_t>(rank)];
}
inline std::int64_t rank_offset(const CollArgs& a, int rank) {
  const auto parts = rank_parts(a);
  std::int64_t at = 0;
  for (int r = 0; r < rank; ++r) at += parts[static_cast<std::size_t>(r)];
  return at;
}
inline double factor_one(int) { return 1.0; }
inline double factor_n_minus_1_over_n(int n) { return static_cast<double>(n - 1) / n; }

}  // namespace dtbench::bench
