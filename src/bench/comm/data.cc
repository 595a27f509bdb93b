#include "bench/comm/data.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "comm/communicator.h"

namespace dtbench::bench {

at::Tensor rank_data(const DataSpec& spec, int rank, std::int64_t offset, std::int64_t count) {
  const auto idx = at::arange(offset, offset + count, at::kLong);
  at::Tensor v;
  if (!spec.reduction) {
    v = (idx + 3 * rank) % 64 + 1;  // 1..64: exact everywhere, shifted per rank
  } else if (spec.op == comm::ReduceOp::kProd) {
    v = ((idx + rank) % 8 == 0).to(at::kLong) + 1;  // 1 or 2: products stay small
  } else if (spec.op == comm::ReduceOp::kMin || spec.op == comm::ReduceOp::kMax) {
    v = (idx * 7 + rank * 5) % 16 + 1;
  } else {
    // sum / avg: at most 256 / nranks per element so the sum fits bfloat16.
    const std::int64_t m = std::clamp<std::int64_t>(256 / std::max(1, spec.nranks), 1, 8);
    v = (idx + rank) % m + 1;
  }
  return v.to(comm::to_scalar_type(spec.dtype));
}

at::Tensor reduced_data(const DataSpec& spec, std::int64_t offset, std::int64_t count) {
  at::Tensor acc = rank_data(spec, 0, offset, count).to(at::kDouble);
  for (int r = 1; r < spec.nranks; ++r) {
    const auto x = rank_data(spec, r, offset, count).to(at::kDouble);
    switch (spec.op) {
      case comm::ReduceOp::kSum:
      case comm::ReduceOp::kAvg:
        acc = acc + x;
        break;
      case comm::ReduceOp::kProd:
        acc = acc * x;
        break;
      case comm::ReduceOp::kMin:
        acc = at::minimum(acc, x);
        break;
      case comm::ReduceOp::kMax:
        acc = at::maximum(acc, x);
        break;
    }
  }
  if (spec.op == comm::ReduceOp::kAvg) {
    acc = acc / spec.nranks;
    if (spec.dtype == comm::DType::kInt32 || spec.dtype == comm::DType::kInt64) acc = at::floor(acc);
  }
  return acc.to(comm::to_scalar_type(spec.dtype));
}

std::int64_t count_wrong(const at::Tensor& got, const at::Tensor& expected) {
  if (got.numel() != expected.numel()) return std::max(got.numel(), expected.numel());
  if (got.numel() == 0) return 0;
  const auto g = got.reshape({-1}).to(at::kDouble);
  const auto e = expected.reshape({-1}).to(at::kDouble);
  return at::ne(g, e).sum().item<std::int64_t>();
}

}  // namespace dtbench::bench
