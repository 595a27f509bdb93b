// The comm benchmark's pure parts that need ATen: bus-bandwidth factors and
// the exact test data, checked against literal values.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

#include "bench/comm/collective.h"
#include "bench/comm/data.h"

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

TEST(Data, SumOfTwoRanks) {
  DataSpec s{comm::DType::kFloat32, comm::ReduceOp::kSum, true, 2};
  EXPECT_EQ(values(rank_data(s, 0, 0, 4)), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(values(rank_data(s, 1, 0, 4)), (std::vector<double>{2, 3, 4, 5}));
  EXPECT_EQ(values(reduced_data(s, 0, 4)), (std::vector<double>{3, 5, 7, 9}));
  EXPECT_EQ(values(reduced_data(s, 6, 3)), (std::vector<double>{15, 9, 3}));  // wraps at 8
}

TEST(Data, ProdMinMax) {
  DataSpec p{comm::DType::kInt32, comm::ReduceOp::kProd, true, 3};
  EXPECT_EQ(values(reduced_data(p, 0, 3)), (std::vector<double>{2, 1, 1}));
  DataSpec mn{comm::DType::kInt64, comm::ReduceOp::kMin, true, 2};
  // rank 0: (7i)%16+1 = 1, 8; rank 1: (7i+5)%16+1 = 6, 13
  EXPECT_EQ(values(reduced_data(mn, 0, 2)), (std::vector<double>{1, 8}));
  DataSpec mx = mn;
  mx.op = comm::ReduceOp::kMax;
  EXPECT_EQ(values(reduced_data(mx, 0, 2)), (std::vector<double>{6, 13}));
}

TEST(Data, SumStaysExactInBfloat16ForManyRanks) {
  for (int n : {1, 2, 3, 4, 16, 64}) {
    DataSpec s{comm::DType::kBFloat16, comm::ReduceOp::kSum, true, n};
    const auto got = reduced_data(s, 0, 1000);
    DataSpec wide = s;
    wide.dtype = comm::DType::kFloat64;
    EXPECT_EQ(count_wrong(got, reduced_data(wide, 0, 1000)), 0) << n << " ranks";
  }
}

TEST(Data, CountWrong) {
  const auto a = at::tensor({1.0, 2.0, 3.0});
  EXPECT_EQ(count_wrong(a, a.clone()), 0);
  EXPECT_EQ(count_wrong(a, at::tensor({1.0, 2.5, 3.0})), 1);
  EXPECT_EQ(count_wrong(at::tensor({std::numeric_limits<double>::quiet_NaN()}), at::tensor({1.0})), 1);
  EXPECT_EQ(count_wrong(a, at::tensor({1.0})), 3);  // size mismatch counts every element
  EXPECT_EQ(count_wrong(at::zeros({0}), at::zeros({0})), 0);
}

}  // namespace dtbench::bench
