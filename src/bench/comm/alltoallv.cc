// alltoallv: rank i sends M[i][j] elements to rank j (bench/comm/vsplit.h,
// --split-sizes), each rank `count` in all, and receives M[*][i] in rank
// order. Rank i's part for j holds elements [sum_{k<j} M[i][k], +M[i][j]) of
// its data, so the expected output is those ranges of every rank's data.
// busbw factor (n-1)/n, as alltoall's (with uneven parts the busiest rank
// moves more than it says).
#include <numeric>

#include "bench/comm/collective_util.h"

namespace dtbench::bench {
namespace {

using Parts = std::vector<std::vector<std::int64_t>>;

// The part matrix: the one made for this size, or made here.
const Parts& matrix(const CollArgs& a, Parts& scratch) {
  if (a.vparts) return *a.vparts;
  scratch = vsplit_matrix(a.vsplit, a.nranks, a.count, a.vsplit.seed);
  return scratch;
}

std::int64_t received(const CollArgs& a) {
  Parts scratch;
  std::int64_t n = 0;
  for (const auto& row : matrix(a, scratch)) n += row[static_cast<std::size_t>(a.rank)];
  return n;
}

}  // namespace

const CollectiveDef& alltoallv_def() {
  static const CollectiveDef def{
      comm::Collective::kAlltoallv,
      /*splits=*/false,
      InPlace::kNone,
      factor_n_minus_1_over_n,
      whole,
      received,
      [](const CollArgs& a) { return rank_data(data_spec(a, false), a.rank, 0, a.count); },
      [](const CollArgs& a) {
        Parts scratch;
        const auto& m = matrix(a, scratch);
        const auto me = static_cast<std::size_t>(a.rank);
        std::vector<at::Tensor> parts;
        for (std::size_t i = 0; i < m.size(); ++i) {
          const std::int64_t start = std::accumulate(m[i].begin(), m[i].begin() + static_cast<std::ptrdiff_t>(me),
                                                     std::int64_t{0});
          parts.push_back(rank_data(data_spec(a, false), static_cast<int>(i), start, m[i][me]));
        }
        return at::cat(parts);
      },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) {
        Parts scratch;
        const auto& m = matrix(a, scratch);
        const auto me = static_cast<std::size_t>(a.rank);
        std::vector<std::int64_t> outs;
        for (const auto& row : m) outs.push_back(row[me]);
        return a.comm->alltoallv(in, out, m[me], outs);
      },
  };
  return def;
}

}  // namespace dtbench::bench
