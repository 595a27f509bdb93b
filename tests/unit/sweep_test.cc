#include "bench/comm/sweep.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace dtbench::bench {

TEST(Sweep, Factor) {
  SweepOptions o;
  o.min_bytes = 1024;
  o.max_bytes = 8192;
  o.factor = 2;
  EXPECT_EQ(size_sweep(o), (std::vector<std::uint64_t>{1024, 2048, 4096, 8192}));
  o.factor = 3;
  EXPECT_EQ(size_sweep(o), (std::vector<std::uint64_t>{1024, 3072}));
}

TEST(Sweep, IncrementAndSinglePoint) {
  SweepOptions o;
  o.min_bytes = 100;
  o.max_bytes = 350;
  o.increment = 100;
  EXPECT_EQ(size_sweep(o), (std::vector<std::uint64_t>{100, 200, 300}));
  o.increment = 0;
  o.min_bytes = o.max_bytes = 64;
  EXPECT_EQ(size_sweep(o), (std::vector<std::uint64_t>{64}));
}

TEST(Sweep, ZeroStartsAtZero) {
  SweepOptions o;
  o.min_bytes = 0;
  o.max_bytes = 4;
  EXPECT_EQ(size_sweep(o), (std::vector<std::uint64_t>{0, 1, 2, 4}));
}

TEST(Sweep, Rejects) {
  SweepOptions o;
  o.min_bytes = 10;
  o.max_bytes = 5;
  EXPECT_THROW(size_sweep(o), UsageError);
  o.max_bytes = 100;
  o.factor = 1.0;
  EXPECT_THROW(size_sweep(o), UsageError);
  o.factor = 0.5;
  EXPECT_THROW(size_sweep(o), UsageError);
  o.min_bytes = 1;
  o.max_bytes = 1'000'000;
  o.increment = 1;
  EXPECT_THROW(size_sweep(o), UsageError);  // over 10,000 points
}

TEST(Sweep, ElementCountRoundsToWholeElementsAndRanks) {
  EXPECT_EQ(element_count(1024, 4, 1), 256u);
  EXPECT_EQ(element_count(7, 4, 1), 1u);
  EXPECT_EQ(element_count(7, 4, 2), 0u);
  EXPECT_EQ(element_count(40, 4, 3), 9u);
}

}  // namespace dtbench::bench
