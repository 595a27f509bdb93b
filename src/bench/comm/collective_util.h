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
inline double factor_one(int) { return 1.0; }
inline double factor_n_minus_1_over_n(int n) { return static_cast<double>(n - 1) / n; }

}  // namespace dtbench::bench
