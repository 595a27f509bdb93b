// allgather: every rank ends with all ranks' chunks, in rank order. The size
// is the gathered (output) buffer, as in nccl-tests. busbw factor (n-1)/n:
// each rank receives the n-1 chunks it does not hold.
#include "bench/comm/collective_util.h"

namespace dtbench::bench {

const CollectiveDef& allgather_def() {
  static const CollectiveDef def{
      comm::Collective::kAllgather,
      /*splits=*/true,
      InPlace::kRankChunk,
      factor_n_minus_1_over_n,
      per_rank,
      whole,
      [](const CollArgs& a) { return rank_data(data_spec(a, false), a.rank, 0, per_rank(a)); },
      [](const CollArgs& a) {
        std::vector<at::Tensor> parts;
        for (int r = 0; r < a.nranks; ++r)
          parts.push_back(rank_data(data_spec(a, false), r, 0, per_rank(a)));
        return at::cat(parts);
      },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) {
        return a.comm->allgather(in, out);
      },
  };
  return def;
}

}  // namespace dtbench::bench
