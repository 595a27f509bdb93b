// reduce_scatter_v: rank i ends with its part of the op over all ranks'
// buffers (vsplit_counts, --split-sizes), the elements after the parts of
// the ranks before it. The size is the input buffer, as reduce_scatter's.
// busbw factor (n-1)/n, as reduce_scatter's.
#include "bench/comm/collective_util.h"

namespace dtbench::bench {

const CollectiveDef& reduce_scatter_v_def() {
  static const CollectiveDef def{
      comm::Collective::kReduceScatterV,
      /*splits=*/false,
      InPlace::kNone,
      factor_n_minus_1_over_n,
      whole,
      [](const CollArgs& a) { return rank_part(a, a.rank); },
      [](const CollArgs& a) { return rank_data(data_spec(a, true), a.rank, 0, a.count); },
      [](const CollArgs& a) {
        return reduced_data(data_spec(a, true), rank_offset(a, a.rank), rank_part(a, a.rank));
      },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) {
        return a.comm->reduce_scatter_v(in, out, rank_parts(a), a.op);
      },
  };
  return def;
}

}  // namespace dtbench::bench
