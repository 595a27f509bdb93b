// train::coalesce_by_dtype: the chunks dtbench's buffer and parameter
// broadcasts send, with literal inputs. Batch norm's buffers alternate
// float32 statistics and an int64 counter; they must make one chunk per
// dtype (a chunk per run of equal dtypes cost resnet50 ~106 broadcasts and
// 20-60 ms per iteration before every forward).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "train/replicas.h"

namespace dtbench::train {
namespace {

using Chunks = std::vector<std::vector<std::size_t>>;

torch::Tensor f32(int64_t n) { return torch::zeros({n}, torch::kFloat); }
torch::Tensor i64(int64_t n) { return torch::zeros({n}, torch::kLong); }

TEST(CoalesceByDtype, InterleavedDtypesMakeOneChunkPerDtype) {
  // Three batch norms: mean, var (float32, 64 B each), counter (int64, 8 B).
  std::vector<torch::Tensor> t;
  for (int layer = 0; layer < 3; ++layer) {
    t.push_back(f32(16));
    t.push_back(f32(16));
    t.push_back(i64(1));
  }
  EXPECT_EQ(coalesce_by_dtype(t, 1 << 20), (Chunks{{0, 1, 3, 4, 6, 7}, {2, 5, 8}}));
}

TEST(CoalesceByDtype, ADtypeChunkClosesAtTheLimitAndOthersStayOpen) {
  // 40 B float32 each, limit 100 B: two floats per chunk; the int64s
  // (8 B each) keep filling their one chunk meanwhile.
  const std::vector<torch::Tensor> t{f32(10), i64(1), f32(10), f32(10), i64(1), f32(10), f32(10)};
  EXPECT_EQ(coalesce_by_dtype(t, 100), (Chunks{{0, 2}, {1, 4}, {3, 5}, {6}}));
}

TEST(CoalesceByDtype, ExactFitStaysInOneChunkAndALargeTensorGoesAlone) {
  const std::vector<torch::Tensor> t{f32(25), f32(25), f32(100), f32(1)};
  // 100 + 100 B fit a 200 B chunk exactly; 400 B is over the limit: alone.
  EXPECT_EQ(coalesce_by_dtype(t, 200), (Chunks{{0, 1}, {2}, {3}}));
}

TEST(CoalesceByDtype, EmptyAndSingle) {
  EXPECT_TRUE(coalesce_by_dtype({}, 100).empty());
  EXPECT_EQ(coalesce_by_dtype({i64(3)}, 1), (Chunks{{0}}));
}

}  // namespace
}  // namespace dtbench::train
