// gather: the root ends with every rank's chunk, in rank order; other ranks'
// outputs are left as they were (checked: still the -1 fill). The size is
// the gathered (output) buffer, as nccl-tests' gather_perf. busbw factor
// (n-1)/n: the root receives the n-1 chunks it does not hold.
#include "bench/comm/collective_util.h"

namespace dtbench::bench {

const CollectiveDef& gather_def() {
  static const CollectiveDef def{
      comm::Collective::kGather,
      /*splits=*/true,
      InPlace::kNone,
      factor_n_minus_1_over_n,
      per_rank,
      whole,
      [](const CollArgs& a) { return rank_data(data_spec(a, false), a.rank, 0, per_rank(a)); },
      [](const CollArgs& a) {
        if (a.rank != a.root)
          return at::full({a.count}, -1, at::TensorOptions().dtype(comm::to_scalar_type(a.dtype)).device(a.device));
        std::vector<at::Tensor> parts;
        for (int r = 0; r < a.nranks; ++r) parts.push_back(rank_data(data_spec(a, false), r, 0, per_rank(a)));
        return at::cat(parts);
      },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) { return a.comm->gather(in, out, a.root); },
  };
  return def;
}

}  // namespace dtbench::bench
