// bench/comm/compute_load's sizing of the run beside the products: -n where
// about four products end inside it, more where a product outlasts the
// collectives (one rank, small sizes, large GEMMs: on an H200, 20-us
// allreduces beside 2.7-ms products left no product inside 20 iterations),
// never past 5 s of collectives or 20,000 iterations.
#include <gtest/gtest.h>

#include "bench/comm/compute_load.h"

namespace dtbench::bench {
namespace {

TEST(IterationsBeside, KeepsItersWhenProductsFitInside) {
  EXPECT_EQ(iterations_beside(20, 1000, 100), 20);  // 20 ms of collectives, 0.1-ms products
  EXPECT_EQ(iterations_beside(20, 1000, 5000), 20);  // exactly four products' worth
}

TEST(IterationsBeside, GrowsUntilAboutFourProductsFit) {
  EXPECT_EQ(iterations_beside(20, 20, 2700), 540);  // the H200's row: 4 * 2700 / 20
  EXPECT_EQ(iterations_beside(6, 50, 3001), 241);   // rounded up
}

TEST(IterationsBeside, StopsAtFiveSecondsOrTwentyThousand) {
  EXPECT_EQ(iterations_beside(20, 1000, 2e6), 5000);  // 8,000 wanted: 5 s of 1-ms iterations
  EXPECT_EQ(iterations_beside(20, 10, 2e6), 20000);   // 800k wanted: at most 20,000 (all are gathered)
  EXPECT_EQ(iterations_beside(20, 1e-9, 1), 20000);   // no overflow
  EXPECT_EQ(iterations_beside(20, 1e6, 1e9), 20);     // never under -n
}

TEST(IterationsBeside, NothingToSizeFromKeepsIters) {
  EXPECT_EQ(iterations_beside(7, 0, 100), 7);  // a row with no time (nothing ran)
  EXPECT_EQ(iterations_beside(7, 100, 0), 7);  // no product timed (the GEMM thread failed)
}

}  // namespace
}  // namespace dtbench::bench
