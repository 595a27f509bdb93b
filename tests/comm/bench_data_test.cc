// The comm benchmark's pure parts that need ATen: bus-bandwidth factors and
// the exact test data, checked against literal values.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

#include "bench/comm/collective.h"
#include "bench/comm/data.h"
#include "compat/torch_version.h"
#include "core/error.h"

namespace dtbench::bench {

TEST(BusFactor, MatchesNcclTests) {
  using comm::Collective;
  EXPECT_DOUBLE_EQ(collective_def(Collective::kAllreduce).bus_factor(4), 1.5);   // 2(n-1)/n
  EXPECT_DOUBLE_EQ(collective_def(Collective::kAllreduce).bus_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(collective_def(Collective::kAllgather).bus_factor(4), 0.75);  // (n-1)/n
  EXPECT_DOUBLE_EQ(collective_def(Collective::kReduceScatter).bus_factor(2), 0.5);
  EXPECT_DOUBLE_EQ(collective_def(Collective::kAlltoall).bus_factor(8), 0.875);
  EXPECT_DOUBLE_EQ(collective_def(Collective::kBroadcast).bus_factor(8), 1.0);
  EXPECT_DOUBLE_EQ(collective_def(Collective::kReduce).bus_factor(8), 1.0);
  EXPECT_DOUBLE_EQ(collective_def(Collective::kSendrecv).bus_factor(8), 1.0);
}

std::vector<double> values(const at::Tensor& t) {
  const auto d = t.to(at::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

// The op over ranks, element by element, from each rank's data: what
// reduced_data's closed form must equal.
// (Each rank's values are small integers, exact in its dtype; the fold is in
// double.)
at::Tensor fold(const DataSpec& s, std::int64_t offset, std::int64_t count) {
  at::Tensor acc = rank_data(s, 0, offset, count).to(at::kDouble);
  for (int r = 1; r < s.nranks; ++r) {
    const auto x = rank_data(s, r, offset, count).to(at::kDouble);
    switch (s.op) {
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
  if (s.op == comm::ReduceOp::kAvg) acc = acc / s.nranks;
  return acc;
}

// bool: the closed form is the or (sum, max) and the and (prod, min) of the
// ranks' 0/1 data, and gives both values (a check that could not fail
// otherwise). float8: exact where LibTorch has it (the fold in double,
// rounded once, as the closed form; an element changed is counted), refused
// where it has not.
TEST(Data, BoolAndFloat8) {
  for (const auto op : {comm::ReduceOp::kSum, comm::ReduceOp::kProd, comm::ReduceOp::kMin, comm::ReduceOp::kMax})
    for (int n : {1, 2, 3, 8, 64}) {
      DataSpec s{comm::DType::kBool, op, true, n};
      const at::Tensor want = fold(s, 3, 2000).ne(0);
      EXPECT_EQ(count_wrong(reduced_data(s, 3, 2000), want), 0) << comm::to_string(op) << " " << n;
      const auto trues = want.sum().item<std::int64_t>();
      if (n > 1) {
        EXPECT_GT(trues, 400) << comm::to_string(op) << " " << n;
        EXPECT_LT(trues, 1600) << comm::to_string(op) << " " << n;
      }
    }
  DataSpec moved{comm::DType::kBool, comm::ReduceOp::kSum, false, 4, c10::Device(c10::DeviceType::CPU), 5};
  const auto ones = rank_data(moved, 1, 0, 2000).sum().item<std::int64_t>();
  EXPECT_GT(ones, 800);
  EXPECT_LT(ones, 1200);
  for (const auto dt : {comm::DType::kFloat8E4M3, comm::DType::kFloat8E5M2}) {
    DataSpec g{dt, comm::ReduceOp::kSum, false, 4, c10::Device(c10::DeviceType::CPU), 5};
    if (compat::torch_version()[0] == '1') {
      EXPECT_THROW(rank_data(g, 0, 0, 10), UnsupportedError);
      continue;
    }
    at::Tensor a = rank_data(g, 2, 0, 1000);
    EXPECT_EQ(count_wrong(a, rank_data(g, 2, 0, 1000)), 0);
    EXPECT_GT(count_wrong(a, rank_data(g, 3, 0, 1000)), 800);
    at::Tensor b = a.clone();
    b.narrow(0, 7, 1).fill_(100);
    EXPECT_EQ(count_wrong(b, a), 1);
    for (const auto op : {comm::ReduceOp::kSum, comm::ReduceOp::kProd, comm::ReduceOp::kMin, comm::ReduceOp::kMax})
      for (int n : {1, 2, 4, 16, 40}) {
        DataSpec s{dt, op, true, n};
        EXPECT_EQ(count_wrong(reduced_data(s, 0, 1000), fold(s, 0, 1000).to(comm::to_scalar_type(dt))), 0)
            << comm::to_string(dt) << " " << comm::to_string(op) << " " << n;
      }
  }
}

TEST(Data, ClosedFormEqualsTheFoldOverRanks) {
  for (const auto op : comm::all_ops())
    for (int n : {1, 2, 3, 7, 8, 9, 64, 200, 300})
      for (std::uint64_t seed : {1ULL, 99ULL}) {
        DataSpec s{comm::DType::kFloat64, op, true, n, c10::Device(c10::DeviceType::CPU), seed};
        EXPECT_EQ(count_wrong(reduced_data(s, 5, 777), fold(s, 5, 777)), 0)
            << comm::to_string(op) << " over " << n << " ranks, seed " << seed;
      }
}

TEST(Data, NoPeriodAcrossChunks) {
  // Chunks whose size is a multiple of any small period must differ: a
  // reduce_scatter or alltoall that sends chunk k where chunk j belongs is
  // then wrong in most elements.
  for (const auto op : {comm::ReduceOp::kSum, comm::ReduceOp::kMax, comm::ReduceOp::kProd})
    for (int n : {2, 8, 16, 32})
      for (std::int64_t c : {64, 128, 256, 1024}) {
        DataSpec s{comm::DType::kFloat32, op, true, n, c10::Device(c10::DeviceType::CPU), 7};
        const auto wrong = count_wrong(reduced_data(s, 0, c), reduced_data(s, c, c));
        // Products are powers of two with few exponents: fewer differ, but
        // periodic data would give none.
        EXPECT_GT(wrong, op == comm::ReduceOp::kProd ? c / 10 : c / 4)
            << comm::to_string(op) << " " << n << " ranks, chunks of " << c;
      }
  // Sums over as many ranks as values (the old pattern's blind spot: every
  // element expected the same) still vary.
  DataSpec s{comm::DType::kFloat32, comm::ReduceOp::kSum, true, 64, c10::Device(c10::DeviceType::CPU), 3};
  EXPECT_GT(std::get<0>(at::_unique(reduced_data(s, 0, 4096))).numel(), 4);
}

TEST(Data, RanksAndSeedsDiffer) {
  DataSpec g{comm::DType::kInt32, comm::ReduceOp::kSum, false, 4, c10::Device(c10::DeviceType::CPU), 11};
  EXPECT_GT(count_wrong(rank_data(g, 0, 0, 1024), rank_data(g, 1, 0, 1024)), 900);  // 63/64 differ
  DataSpec other = g;
  other.seed = 12;
  EXPECT_GT(count_wrong(rank_data(g, 0, 0, 1024), rank_data(other, 0, 0, 1024)), 900);
  // Reductions: each rank's contribution differs from its neighbour's.
  DataSpec r{comm::DType::kFloat32, comm::ReduceOp::kSum, true, 4, c10::Device(c10::DeviceType::CPU), 11};
  EXPECT_EQ(count_wrong(rank_data(r, 0, 0, 1024), rank_data(r, 1, 0, 1024)), 1024);
  // Offsets are global: elements [10, 20) are elements 10-19 of [0, 20).
  EXPECT_EQ(count_wrong(rank_data(g, 2, 10, 10), rank_data(g, 2, 0, 20).narrow(0, 10, 10)), 0);
}

TEST(Data, SumsAndProductsStayExactAtAnyRankCount) {
  for (int n : {1, 2, 3, 4, 16, 64, 128, 129, 256}) {
    DataSpec s{comm::DType::kBFloat16, comm::ReduceOp::kSum, true, n};
    EXPECT_EQ(tolerance(s), 0) << n;
    EXPECT_EQ(count_wrong(reduced_data(s, 0, 1000), fold(s, 0, 1000)), 0) << n << " ranks";
    EXPECT_LE(fold(s, 0, 1000).max().item<double>(), 256) << n;
  }
  // 8-bit integers: sums within int8's 127 and uint8's 255, products of
  // int8 below 128 up to 40 ranks.
  for (int n : {1, 2, 3, 4, 16, 63, 64, 127}) {
    for (const auto dt : {comm::DType::kInt8, comm::DType::kUInt8}) {
      DataSpec s{dt, comm::ReduceOp::kSum, true, n};
      EXPECT_EQ(count_wrong(reduced_data(s, 0, 1000), fold(s, 0, 1000)), 0) << n << " ranks";
      EXPECT_LE(fold(s, 0, 1000).max().item<double>(), dt == comm::DType::kInt8 ? 127 : 255) << n;
    }
  }
  DataSpec p8{comm::DType::kInt8, comm::ReduceOp::kProd, true, 40};
  EXPECT_LE(fold(p8, 0, 4096).max().item<double>(), 64);
  EXPECT_EQ(count_wrong(reduced_data(p8, 0, 4096), fold(p8, 0, 4096)), 0);
  // Beyond: at most 256 (127, 255) ranks contribute a 1 to each element.
  for (int n : {257, 300, 2000}) {
    for (const auto dt : {comm::DType::kBFloat16, comm::DType::kInt8, comm::DType::kUInt8}) {
      DataSpec s{dt, comm::ReduceOp::kSum, true, n};
      EXPECT_EQ(tolerance(s), 0) << n;
      EXPECT_EQ(count_wrong(reduced_data(s, 0, 1000), fold(s, 0, 1000)), 0) << n << " ranks";
      const auto f = fold(s, 0, 1000);
      EXPECT_LE(f.max().item<double>(), dt == comm::DType::kInt8 ? 127 : dt == comm::DType::kUInt8 ? 255 : 256) << n;
      EXPECT_GT(std::get<0>(at::_unique(f)).numel(), 1) << n;  // not one value everywhere
    }
  }
  // Products stay within each dtype's powers of two at any rank count.
  for (int n : {41, 49, 200, 1000})
    for (const auto dt : {comm::DType::kInt8, comm::DType::kUInt8, comm::DType::kFloat16, comm::DType::kInt32}) {
      DataSpec s{dt, comm::ReduceOp::kProd, true, n};
      const double cap = dt == comm::DType::kInt8 ? 64 : dt == comm::DType::kUInt8 ? 128
                         : dt == comm::DType::kFloat16 ? 32768 : 1073741824.0;
      EXPECT_LE(fold(s, 0, 2000).max().item<double>(), cap) << comm::to_string(dt) << " " << n;
      EXPECT_EQ(count_wrong(reduced_data(s, 0, 2000), fold(s, 0, 2000)), 0) << comm::to_string(dt) << " " << n;
    }
  // Only avg of floating types allows rounding.
  EXPECT_GT(tolerance(DataSpec{comm::DType::kFloat32, comm::ReduceOp::kAvg, true, 3}), 0);
  EXPECT_EQ(tolerance(DataSpec{comm::DType::kInt32, comm::ReduceOp::kAvg, true, 3}), 0);
  EXPECT_EQ(tolerance(DataSpec{comm::DType::kFloat32, comm::ReduceOp::kSum, true, 3}), 0);
}

TEST(Data, CountWrong) {
  const auto a = at::tensor({1.0, 2.0, 3.0});
  EXPECT_EQ(count_wrong(a, a.clone()), 0);
  EXPECT_EQ(count_wrong(a, at::tensor({1.0, 2.5, 3.0})), 1);
  EXPECT_EQ(count_wrong(at::tensor({std::numeric_limits<double>::quiet_NaN()}), at::tensor({1.0})), 1);
  EXPECT_EQ(count_wrong(a, at::tensor({1.0})), 3);  // size mismatch counts every element
  EXPECT_EQ(count_wrong(at::zeros({0}), at::zeros({0})), 0);
  // With a tolerance: relative to max(1, |expected|).
  EXPECT_EQ(count_wrong(at::tensor({100.0, 1.0}), at::tensor({100.5, 1.0}), 0.01), 0);
  EXPECT_EQ(count_wrong(at::tensor({100.0, 1.0}), at::tensor({102.0, 1.0}), 0.01), 1);
  EXPECT_EQ(count_wrong(at::tensor({std::numeric_limits<double>::quiet_NaN()}), at::tensor({1.0}), 0.5), 1);
}

}  // namespace dtbench::bench
