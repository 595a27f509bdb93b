// scatter: rank r ends with chunk r of the root's buffer. Every rank's input
// is its own data; only the root's is sent, so a rank that received from the
// wrong root (or the wrong chunk) differs. The size is the root's (input)
// buffer, as nccl-tests' scatter_perf. busbw factor (n-1)/n: the root sends
// the n-1 chunks it does not keep.
#include "bench/comm/collective_util.h"

namespace dtbench::bench {

const CollectiveDef& scatter_def() {
  static const CollectiveDef def{
      comm::Collective::kScatter,
      /*splits=*/true,
      InPlace::kNone,
      factor_n_minus_1_over_n,
      whole,
      per_rank,
      [](const CollArgs& a) { return rank_data(data_spec(a, false), a.rank, 0, a.count); },
      [](const CollArgs& a) { return rank_data(data_spec(a, false), a.root, a.rank * per_rank(a), per_rank(a)); },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) { return a.comm->scatter(in, out, a.root); },
  };
  return def;
}

}  // namespace dtbench::bench
