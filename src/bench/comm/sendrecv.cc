// sendrecv: each rank sends its buffer to rank+1 and receives from rank-1
// (a ring shift). busbw factor 1.
#include "bench/comm/collective_util.h"

namespace dtbench::bench {

const CollectiveDef& sendrecv_def() {
  static const CollectiveDef def{
      comm::Collective::kSendrecv,
      /*splits=*/false,
      InPlace::kNone,
      factor_one,
      whole,
      whole,
      [](const CollArgs& a) { return rank_data(data_spec(a, false), a.rank, 0, a.count); },
      [](const CollArgs& a) {
        return rank_data(data_spec(a, false), (a.rank + a.nranks - 1) % a.nranks, 0, a.count);
      },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) {
        return a.comm->sendrecv(in, out, (a.rank + 1) % a.nranks,
                                (a.rank + a.nranks - 1) % a.nranks);
      },
  };
  return def;
}

}  // namespace dtbench::bench
