// reduce: the root ends with the op over all ranks' buffers. Out of place,
// other ranks' outputs are left as they were (checked: still the -1 fill);
// in place their buffers are the backend's scratch and not checked.
// busbw factor 1.
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
        if (a.rank != a.root) {
          if (a.in_place) return at::Tensor();
          return at::full({a.count}, -1, at::TensorOptions().dtype(comm::to_scalar_type(a.dtype)).device(a.device));
        }
        return reduced_data(data_spec(a, true), 0, a.count);
      },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) {
        return a.comm->reduce(in, out, a.root, a.op);
      },
  };
  return def;
}

}  // namespace dtbench::bench
