#include "bench/comm/data.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include "comm/communicator.h"
#include "core/mix.h"

namespace dtbench::bench {

namespace {

std::uint64_t mix(std::uint64_t x) { return splitmix64(x); }

// One hash per element, shared by all ranks (reductions), or per rank
// (data that identifies its rank).
std::uint64_t element_hash(std::uint64_t seed, std::int64_t i) { return mix(seed ^ mix(static_cast<std::uint64_t>(i))); }
std::uint64_t rank_hash(std::uint64_t seed, int rank, std::int64_t i) {
  return mix(element_hash(seed, i) + 0xD6E8FEB86659FD93ULL * (static_cast<std::uint64_t>(rank) + 1));
}

// Reductions: rank r < n-1 has at element i the value lo + (h_i + r * step)
// mod m, with h_i the element's hash; over those ranks the result depends
// only on h_i mod m, so it is tabulated once (m entries) and looked up per
// element. The last rank's value comes from a hash of its own, so results
// vary from element to element even where n-1 is a multiple of m (every
// residue then occurs equally often and the table would be constant).
// `indicator`: the value is `hi` where the residue is 0 and `lo` elsewhere
// (products: 2 or 1; sums over more ranks than a dtype's exact integers
// allow small values for: 1 or 0), so at most ceil((n-1)/m) + 1 ranks
// contribute `hi` to an element.
struct ReductionPattern {
  std::int64_t lo = 1, m = 1, step = 1;
  bool indicator = false;
  double hi = 0;
};

// The largest integer the dtype holds exactly that sums may reach, and the
// largest power of two products may reach.
std::int64_t sum_limit(comm::DType t) {
  switch (t) {
    case comm::DType::kInt8:
      return 127;
    case comm::DType::kUInt8:
      return 255;
    case comm::DType::kFloat8E4M3:
      return 16;  // 3 mantissa bits: every integer up to 2^4
    case comm::DType::kFloat8E5M2:
      return 8;  // 2 mantissa bits: every integer up to 2^3
    default:
      return 256;  // bfloat16's exact integers; every other type holds more
  }
}
std::int64_t max_exponent(comm::DType t) {
  switch (t) {
    case comm::DType::kInt8:
      return 6;
    case comm::DType::kUInt8:
      return 7;
    case comm::DType::kFloat16:
      return 15;
    case comm::DType::kInt32:
      return 30;
    case comm::DType::kInt64:
      return 62;
    case comm::DType::kFloat8E4M3:
      return 8;  // largest finite 448
    case comm::DType::kFloat8E5M2:
      return 15;  // largest finite 57344
    default:
      return 127;  // float32, bfloat16 (float64 holds more)
  }
}

// m for an indicator pattern so that at most `cap` ranks contribute: the
// n-1 tabulated ranks give at most ceil((n-1)/m), the last rank one more.
std::int64_t indicator_m(std::int64_t n, std::int64_t cap) {
  const std::int64_t room = std::max<std::int64_t>(cap - 1, 1);
  return std::max<std::int64_t>(2, (n - 1 + room - 1) / room);
}

ReductionPattern pattern(const DataSpec& s) {
  const std::int64_t n = std::max(1, s.nranks);
  if (s.dtype == comm::DType::kBool) {
    // 0/1 values whose or (sum, max) and and (prod, min) vary from element
    // to element: the n-1 tabulated ranks cover n-1 of 2n residues, so about
    // half the elements have a rank with residue 0. Sums and products of
    // 0/1 in double, cast to bool, are the or and the and.
    const bool logical_and = s.op == comm::ReduceOp::kProd || s.op == comm::ReduceOp::kMin;
    return logical_and ? ReductionPattern{1, 2 * n, 1, true, 0.0} : ReductionPattern{0, 2 * n, 1, true, 1.0};
  }
  switch (s.op) {
    case comm::ReduceOp::kProd:
      // At most max_exponent twos per element (8 ranks apart at least).
      return {1, std::max<std::int64_t>(8, indicator_m(n, max_exponent(s.dtype))), 1, true, 2.0};
    case comm::ReduceOp::kMin:
    case comm::ReduceOp::kMax:
      return {1, 127, 37};  // 1..127 (int8 too), distinct over up to 127 ranks
    case comm::ReduceOp::kSum:
    case comm::ReduceOp::kAvg:
    default: {
      // Values 1..m with n * m within the limit while n <= limit / 2;
      // beyond, 1 on at most `limit` ranks per element and 0 elsewhere.
      const std::int64_t limit = sum_limit(s.dtype);
      const std::int64_t m = std::min<std::int64_t>(64, limit / n);
      if (m >= 2) return {1, m, 1};
      return {0, indicator_m(n, limit), 1, true, 1.0};
    }
  }
}

double from_residue(const DataSpec&, const ReductionPattern& p, std::uint64_t k) {
  if (p.indicator) return k == 0 ? p.hi : static_cast<double>(p.lo);
  return static_cast<double>(p.lo + static_cast<std::int64_t>(k));
}

// Rank `rank`'s value at element i.
double value(const DataSpec& s, const ReductionPattern& p, std::int64_t i, int rank) {
  const auto m = static_cast<std::uint64_t>(p.m);
  if (rank == std::max(1, s.nranks) - 1) return from_residue(s, p, rank_hash(s.seed, rank, i) % m);
  const std::uint64_t c = element_hash(s.seed, i) % m;
  return from_residue(s, p, (c + static_cast<std::uint64_t>(rank) * static_cast<std::uint64_t>(p.step)) % m);
}

double combine(comm::ReduceOp op, double acc, double x) {
  switch (op) {
    case comm::ReduceOp::kProd:
      return acc * x;
    case comm::ReduceOp::kMin:
      return std::min(acc, x);
    case comm::ReduceOp::kMax:
      return std::max(acc, x);
    case comm::ReduceOp::kSum:
    case comm::ReduceOp::kAvg:
    default:
      return acc + x;
  }
}

double identity(comm::ReduceOp op) {
  switch (op) {
    case comm::ReduceOp::kProd:
      return 1;
    case comm::ReduceOp::kMin:
      return std::numeric_limits<double>::infinity();
    case comm::ReduceOp::kMax:
      return -std::numeric_limits<double>::infinity();
    default:
      return 0;
  }
}

// A tensor of `count` elements of the spec's dtype, element k = fn(k) (small
// integers, exact in every dtype), filled in place on the host in parallel,
// then moved to the spec's device: one element's bytes per element. bool and
// float8, which ATen's dispatch macros here do not cover, are filled in
// float32 and converted (nonzero is true; small integers are exact).
template <typename Fn>
at::Tensor make_tensor(const DataSpec& s, std::int64_t count, Fn fn) {
  const bool via_float = s.dtype == comm::DType::kBool || comm::is_float8(s.dtype);
  const at::ScalarType wanted = comm::to_scalar_type(s.dtype);
  at::Tensor t = at::empty({std::max<std::int64_t>(count, 0)}, via_float ? at::kFloat : wanted);
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, t.scalar_type(), "comm_test_data", [&] {
    auto* out = t.data_ptr<scalar_t>();
    at::parallel_for(0, count, 1 << 16, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t k = begin; k < end; ++k) out[k] = static_cast<scalar_t>(fn(k));
    });
  });
  if (via_float) t = t.to(wanted);
  return s.device.is_cpu() ? t : t.to(s.device);
}

}  // namespace

at::Tensor rank_data(const DataSpec& spec, int rank, std::int64_t offset, std::int64_t count) {
  if (!spec.reduction) {
    // 1..64; bool 0/1 (so that chunks differ); float8 1..16 (exact in e4m3;
    // in e5m2 9, 11, 13 and 15 round, alike on both sides).
    const std::uint64_t values = spec.dtype == comm::DType::kBool ? 2 : comm::is_float8(spec.dtype) ? 16 : 64;
    const double first = spec.dtype == comm::DType::kBool ? 0 : 1;
    return make_tensor(spec, count, [&](std::int64_t k) {
      return first + static_cast<double>(rank_hash(spec.seed, rank, offset + k) % values);
    });
  }
  const auto p = pattern(spec);
  return make_tensor(spec, count, [&](std::int64_t k) { return value(spec, p, offset + k, rank); });
}

at::Tensor reduced_data(const DataSpec& spec, std::int64_t offset, std::int64_t count) {
  // Tabulate the op over ranks 0..n-2 for each residue (exact in double:
  // small integers), then per element look it up and fold in the last rank.
  const auto p = pattern(spec);
  const int n = std::max(1, spec.nranks);
  const auto m = static_cast<std::uint64_t>(p.m);
  std::vector<double> table(m, identity(spec.op));
  for (std::uint64_t c = 0; c < m; ++c)
    for (int r = 0; r + 1 < n; ++r)
      table[c] = combine(spec.op, table[c],
                         from_residue(spec, p, (c + static_cast<std::uint64_t>(r) * static_cast<std::uint64_t>(p.step)) % m));
  return make_tensor(spec, count, [&](std::int64_t k) {
    const std::int64_t i = offset + k;
    double acc = combine(spec.op, table[element_hash(spec.seed, i) % m], value(spec, p, i, n - 1));
    if (spec.op == comm::ReduceOp::kAvg) {
      acc /= n;
      if (comm::is_integer(spec.dtype)) acc = std::floor(acc);
    }
    return acc;
  });
}

double tolerance(const DataSpec& spec) {
  double eps = 0;
  switch (spec.dtype) {
    case comm::DType::kFloat16:
      eps = std::ldexp(1.0, -10);
      break;
    case comm::DType::kBFloat16:
      eps = std::ldexp(1.0, -7);
      break;
    case comm::DType::kFloat32:
      eps = std::ldexp(1.0, -23);
      break;
    case comm::DType::kFloat64:
      eps = std::ldexp(1.0, -52);
      break;
    default:
      return 0;  // integers: exact or wrong
  }
  const int n = std::max(1, spec.nranks);
  if (spec.reduction && spec.op == comm::ReduceOp::kAvg) return n * eps;
  return 0;
}

std::int64_t count_wrong(const at::Tensor& got, const at::Tensor& expected, double rel_tol) {
  if (got.numel() != expected.numel()) return std::max(got.numel(), expected.numel());
  if (got.numel() == 0) return 0;
  if (rel_tol > 0) {
    const auto g = got.reshape({-1}).to(at::kDouble);
    const auto e = expected.reshape({-1}).to(at::kDouble);
    const auto bound = at::clamp_min(e.abs(), 1.0) * rel_tol;
    // NaN compares false, so it is counted.
    return at::logical_not(at::le((g - e).abs(), bound)).sum().item<std::int64_t>();
  }
  // Same dtype: compare as is (NaN != anything); otherwise, and for float8
  // (which ATen's CPU comparisons may not take), in double.
  const bool float8 = at::isFloatingType(got.scalar_type()) && got.element_size() == 1;
  const bool same = got.scalar_type() == expected.scalar_type() && !float8;
  const auto g = same ? got.reshape({-1}) : got.reshape({-1}).to(at::kDouble);
  const auto e = same ? expected.reshape({-1}) : expected.reshape({-1}).to(at::kDouble);
  return at::ne(g, e).sum().item<std::int64_t>();
}

}  // namespace dtbench::bench
