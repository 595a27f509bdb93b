// alltoall: chunk j of rank r's input goes to chunk r of rank j's output.
// Rank r's chunk j holds elements [j*c, (j+1)*c) of its data, so the expected
// output chunk j is that range of rank j's data. busbw factor (n-1)/n.
#include "bench/comm/collective_util.h"

namespace dtbench::bench {

const CollectiveDef& alltoall_def() {
  static const CollectiveDef def{
      comm::Collective::kAlltoall,
      /*splits=*/true,
      InPlace::kNone,
      factor_n_minus_1_over_n,
      whole,
      whole,
      [](const CollArgs& a) { return rank_data(data_spec(a, false), a.rank, 0, a.count); },
      [](const CollArgs& a) {
        std::vector<at::Tensor> parts;
        const auto c = per_rank(a);
        for (int j = 0; j < a.nranks; ++j)
          parts.push_back(rank_data(data_spec(a, false), j, a.rank * c, c));
        return at::cat(parts);
      },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) {
        return a.comm->alltoall(in, out);
      },
  };
  return def;
}

}  // namespace dtbench::bench
