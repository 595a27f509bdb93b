// allgatherv: rank i contributes its part of the size (vsplit_counts,
// --split-sizes), every rank ends with all parts in rank order. The size is
// the gathered buffer, as allgather's. busbw factor (n-1)/n, as allgather's
// (with uneven parts the rank with the smallest part receives more than it
// says).
#include "bench/comm/collective_util.h"

namespace dtbench::bench {

const CollectiveDef& allgatherv_def() {
  static const CollectiveDef def{
      comm::Collective::kAllgatherv,
      /*splits=*/false,
      InPlace::kNone,
      factor_n_minus_1_over_n,
      [](const CollArgs& a) { return rank_part(a, a.rank); },
      whole,
      [](const CollArgs& a) { return rank_data(data_spec(a, false), a.rank, 0, rank_part(a, a.rank)); },
      [](const CollArgs& a) {
        std::vector<at::Tensor> parts;
        for (int r = 0; r < a.nranks; ++r) parts.push_back(rank_data(data_spec(a, false), r, 0, rank_part(a, r)));
        return at::cat(parts);
      },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) {
        return a.comm->allgatherv(in, out, rank_parts(a));
      },
  };
  return def;
}

}  // namespace dtbench::bench
