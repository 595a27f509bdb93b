// reduce_scatter: rank r ends with chunk r of the op over all ranks' buffers.
// The size is the input buffer, as in nccl-tests. busbw factor (n-1)/n.
#include "bench/comm/collective_util.h"

namespace dtbench::bench {

const CollectiveDef& reduce_scatter_def() {
  static const CollectiveDef def{
      comm::Collective::kReduceScatter,
      /*splits=*/true,
      InPlace::kNone,
      factor_n_minus_1_over_n,
      whole,
      per_rank,
      [](const CollArgs& a) { return rank_data(data_spec(a, true), a.rank, 0, a.count); },
      [](const CollArgs& a) {
        return reduced_data(data_spec(a, true), a.rank * per_rank(a), per_rank(a));
      },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) {
        return a.comm->reduce_scatter(in, out, a.op);
      },
  };
  return def;
}

}  // namespace dtbench::bench
