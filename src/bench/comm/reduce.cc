// reduce: the root ends with the op over all ranks' buffers; other ranks'
// outputs are undefined and not checked. busbw factor 1.
#include "bench/comm/collective_util.h"

namespace dtbench::bench {

const CollectiveDef& reduce_def() {
  static const CollectiveDef def{
      comm::Collective::kReduce,
      /*splits=*/false,
      InPlace::kSame,
      factor_one,
      whole,
      whole,
      [](const CollArgs& a) { return rank_data(data_spec(a, true), a.rank, 0, a.count); },
      [](const CollArgs& a) {
        if (a.rank != a.root) return at::Tensor();
        return reduced_data(data_spec(a, true), 0, a.count);
      },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) {
        return a.comm->reduce(in, out, a.root, a.op);
      },
  };
  return def;
}

}  // namespace dtbench::bench
