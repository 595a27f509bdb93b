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
  EXPECT_EQ(element_count(1024, 4), 256u);
  EXPECT_EQ(element_count(7, 4), 1u);
  // Split buffers as nccl-tests' allgather/reduce_scatter: each rank's part
  // 16 bytes' worth per part (nccl-tests 2.19: (count / n) & -(16 / eltSize)),
  // the last argument: 4 float32, 2 float64, 8 bfloat16, 16 int8.
  EXPECT_EQ(split_element_count(1024, 4, 2, 4), 256u);  // parts of 128
  EXPECT_EQ(split_element_count(1024, 4, 3, 4), 252u);  // parts of 84, not 85
  EXPECT_EQ(split_element_count(40, 4, 3, 4), 0u);      // 10 elements: parts of 3 round to 0
  EXPECT_EQ(split_element_count(96, 8, 3, 4), 12u);     // float64: parts of 4
  EXPECT_EQ(split_element_count(7, 4, 1, 1), 1u);
  EXPECT_EQ(split_element_count(48, 8, 2, 2), 4u);      // float64: 2 parts of 2 (32 B)
  EXPECT_EQ(split_element_count(1024, 2, 3, 8), 504u);  // bfloat16: parts of 168, not 170
  EXPECT_EQ(split_element_count(100, 1, 3, 16), 96u);   // int8: parts of 32, not 33
}

TEST(Sweep, BufferWindowsRotateSmallMessagesThroughTheLargestBuffer) {
  // 32 MiB of float32 (8 Mi elements) holds 32768 windows of 1 KiB, of
  // which the first 4,096 are used: 20 iterations touch 20 different KiB, not
  // one KiB 20 times.
  EXPECT_EQ(buffer_windows(8 << 20, 256, 8 << 20, 256), kMaxBufferWindows);  // 32768 fit
  EXPECT_EQ(buffer_windows(8 << 20, 4096, 8 << 20, 4096), 2048);
  EXPECT_EQ(buffer_windows(8 << 20, 8 << 20, 8 << 20, 8 << 20), 1);  // the largest: one window
  // allgather: input a part, output the whole; the tighter of the two.
  EXPECT_EQ(buffer_windows(4 << 20, 2048, 8 << 20, 8192), 1024);
  EXPECT_EQ(buffer_windows(0, 0, 1000, 300), 3);  // in place: the output only
  EXPECT_EQ(buffer_windows(1000, 0, 1000, 0), 1000);  // empty messages
  EXPECT_EQ(buffer_windows(100000, 0, 100000, 0), kMaxBufferWindows);
  EXPECT_EQ(buffer_windows(10, 20, 10, 20), 1);       // never 0
}

}  // namespace dtbench::bench
