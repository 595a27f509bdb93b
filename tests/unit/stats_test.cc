#include "stats/stats.h"

#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

namespace dtbench::stats {

TEST(Stats, MeanAndStdev) {
  EXPECT_DOUBLE_EQ(mean({1, 2, 3, 4}), 2.5);
  EXPECT_NEAR(stdev({2, 4, 4, 4, 5, 5, 7, 9}), 2.138089935, 1e-9);  // sample stdev
  EXPECT_DOUBLE_EQ(stdev({42}), 0.0);
}

TEST(Stats, PercentileInterpolatesLikeNumpy) {
  const std::vector<double> xs{15, 20, 35, 40, 50};
  EXPECT_DOUBLE_EQ(percentile(xs, 0), 15);
  EXPECT_DOUBLE_EQ(percentile(xs, 100), 50);
  EXPECT_DOUBLE_EQ(percentile(xs, 50), 35);
  EXPECT_DOUBLE_EQ(percentile(xs, 40), 29);  // numpy.percentile(xs, 40) == 29.0
  EXPECT_DOUBLE_EQ(percentile({5, 1}, 50), 3);  // unsorted input
  EXPECT_DOUBLE_EQ(median({7}), 7);
}

TEST(Stats, EmptyAndInvalidInputsThrow) {
  EXPECT_THROW(mean({}), std::invalid_argument);
  EXPECT_THROW(percentile({}, 50), std::invalid_argument);
  EXPECT_THROW(percentile({1}, 101), std::invalid_argument);
  EXPECT_THROW(percentile({1}, -1), std::invalid_argument);
  EXPECT_THROW(delta_percent(0, 1), std::invalid_argument);
}

TEST(Stats, SummaryOfEmptyIsNaN) {
  const auto s = summarize({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_TRUE(std::isnan(s.p50));
}

TEST(Stats, Summary) {
  const auto s = summarize({4, 1, 3, 2});
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  EXPECT_DOUBLE_EQ(s.p75, 3.25);
  EXPECT_DOUBLE_EQ(delta_percent(2.0, 1.5), -25.0);
}

}  // namespace dtbench::stats
