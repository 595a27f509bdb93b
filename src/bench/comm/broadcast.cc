// broadcast: every rank ends with the root's buffer. busbw factor 1: every
// rank receives the whole buffer once.
#include "bench/comm/collective_util.h"

namespace dtbench::bench {

const CollectiveDef& broadcast_def() {
  static const CollectiveDef def{
      comm::Collective::kBroadcast,
      /*splits=*/false,
      InPlace::kSame,
      factor_one,
      whole,
      whole,
      [](const CollArgs& a) { return rank_data(data_spec(a, false), a.rank, 0, a.count); },
      [](const CollArgs& a) { return rank_data(data_spec(a, false), a.root, 0, a.count); },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) {
        return a.comm->broadcast(in, out, a.root);
      },
  };
  return def;
}

}  // namespace dtbench::bench
