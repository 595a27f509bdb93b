// The device mesh (layout/parallel_dims.h): pp outermost, tp innermost, as
// torchtitan's; the groups along each dimension; the refusals.
#include <gtest/gtest.h>

#include "core/error.h"
#include "layout/parallel_dims.h"

namespace dtbench::layout {
namespace {

using Groups = std::vector<std::vector<int>>;

TEST(ParallelDims, EightRanksAsPp2Dp2Tp2) {
  const auto d = ParallelDims::of_world(8, 2, 2);
  EXPECT_EQ(d.dp, 2);
  EXPECT_EQ(d.world(), 8);
  EXPECT_EQ(d.describe(), "pp 2 x dp 2 x tp 2");
  EXPECT_EQ(d.groups(Dim::kTp), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(d.groups(Dim::kDp), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(d.groups(Dim::kPp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  const auto c = d.coords(6);
  EXPECT_EQ(c.pp, 1);
  EXPECT_EQ(c.dp, 1);
  EXPECT_EQ(c.tp, 0);
  EXPECT_EQ(d.group_of(Dim::kDp, 5), (std::vector<int>{5, 7}));
}

TEST(ParallelDims, DataParallelOnlyAndTensorParallelOnly) {
  const auto dp = ParallelDims::of_world(4, 1, 1);
  EXPECT_EQ(dp.describe(), "dp 4");
  EXPECT_EQ(dp.groups(Dim::kDp), (Groups{{0, 1, 2, 3}}));
  EXPECT_EQ(dp.groups(Dim::kTp), (Groups{{0}, {1}, {2}, {3}}));
  const auto tp = ParallelDims::of_world(4, 4, 1);
  EXPECT_EQ(tp.describe(), "tp 4");
  EXPECT_EQ(tp.groups(Dim::kTp), (Groups{{0, 1, 2, 3}}));
  EXPECT_EQ(ParallelDims::of_world(1, 1, 1).describe(), "dp 1");
  // Every rank in exactly one group along each dimension, the groups of
  // equal size: 12 ranks as pp 3 x dp 2 x tp 2.
  const auto m = ParallelDims::of_world(12, 2, 3);
  for (Dim dim : {Dim::kPp, Dim::kDp, Dim::kTp}) {
    std::vector<int> seen(12, 0);
    for (const auto& g : m.groups(dim)) {
      EXPECT_EQ(static_cast<int>(g.size()), m.degree(dim)) << to_string(dim);
      for (int r : g) ++seen[static_cast<std::size_t>(r)];
    }
    for (int s : seen) EXPECT_EQ(s, 1) << to_string(dim);
  }
}

TEST(ParallelDims, RefusesWhatDoesNotDivideTheWorld) {
  try {
    ParallelDims::of_world(6, 4, 1);
    FAIL() << "no refusal";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--tp 4 x --pp 1 = 4 does not divide the 6 ranks into data-parallel replicas");
  }
  EXPECT_THROW(ParallelDims::of_world(4, 0, 1), UsageError);
  EXPECT_THROW(ParallelDims::of_world(4, 1, 0), UsageError);
}

}  // namespace
}  // namespace dtbench::layout
