#include "bench/comm/data.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "comm/communicator.h"

namespace dtbench::bench {

namespace {

// Every pattern is periodic in the element index with a period of at most 64,
// so a large buffer is one period tiled: a copy at memory speed instead of
// integer arithmetic over every element.
constexpr std::int64_t kPeriod = 64;

at::Tensor one_period(const DataSpec& spec, int rank) {
  const auto idx = at::arange(0, kPeriod, at::TensorOptions().dtype(at::kLong).device(spec.device));
  at::Tensor v;
  if (!spec.reduction) {
    v = (idx + 3 * rank) % 64 + 1;  // 1..64: exact everywhere, shifted per rank
  } else if (spec.op == comm::ReduceOp::kProd) {
    v = ((idx + rank) % 8 == 0).to(at::kLong) + 1;  // 1 or 2: products stay small
  } else if (spec.op == comm::ReduceOp::kMin || spec.op == comm::ReduceOp::kMax) {
    v = (idx * 7 + rank * 5) % 16 + 1;
  } else {
    // sum / avg: at most 256 / nranks per element so the sum fits bfloat16.
    // m divides 64 (a power of two), so the pattern's period divides kPeriod.
    std::int64_t m = 8;
    while (m > 1 && m * std::max(1, spec.nranks) > 256) m /= 2;
    v = (idx + rank) % m + 1;
  }
  return v;
}

at::Tensor tile(const at::Tensor& period, std::int64_t offset, std::int64_t count) {
  const std::int64_t start = offset % kPeriod;
  const std::int64_t reps = (start + count + kPeriod - 1) / kPeriod;
  return period.repeat({std::max<std::int64_t>(reps, 1)}).narrow(0, start, count).contiguous();
}

}  // namespace

at::Tensor rank_data(const DataSpec& spec, int rank, std::int64_t offset, std::int64_t count) {
  return tile(one_period(spec, rank).to(comm::to_scalar_type(spec.dtype)), offset, count);
}

at::Tensor reduced_data(const DataSpec& spec, std::int64_t offset, std::int64_t count) {
  // Fold one period in double (exact: small integers), then tile.
  at::Tensor acc = one_period(spec, 0).to(at::kDouble);
  for (int r = 1; r < spec.nranks; ++r) {
    const auto x = one_period(spec, r).to(at::kDouble);
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
  return tile(acc.to(comm::to_scalar_type(spec.dtype)), offset, count);
}

std::int64_t count_wrong(const at::Tensor& got, const at::Tensor& expected) {
  if (got.numel() != expected.numel()) return std::max(got.numel(), expected.numel());
  if (got.numel() == 0) return 0;
  // Same dtype: compare as is (NaN != anything); otherwise in double.
  const bool same = got.scalar_type() == expected.scalar_type();
  const auto g = same ? got.reshape({-1}) : got.reshape({-1}).to(at::kDouble);
  const auto e = same ? expected.reshape({-1}) : expected.reshape({-1}).to(at::kDouble);
  return at::ne(g, e).sum().item<std::int64_t>();
}

}  // namespace dtbench::bench
