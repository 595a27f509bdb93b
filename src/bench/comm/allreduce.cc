// allreduce: every rank ends with the op over all ranks' buffers.
// busbw factor 2(n-1)/n: a ring allreduce is a reduce-scatter then an
// allgather, each moving (n-1)/n of the buffer through every link.
#include "bench/comm/collective_util.h"

namespace dtbench::bench {

const CollectiveDef& allreduce_def() {
  static const CollectiveDef def{
      comm::Collective::kAllreduce,
      /*splits=*/false,
      InPlace::kSame,
      [](int n) { return 2.0 * (n - 1) / n; },
      whole,
      whole,
      [](const CollArgs& a) { return rank_data(data_spec(a, true), a.rank, 0, a.count); },
      [](const CollArgs& a) { return reduced_data(data_spec(a, true), 0, a.count); },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) {
        return a.comm->allreduce(in, out, a.op);
      },
  };
  return def;
}

}  // namespace dtbench::bench
