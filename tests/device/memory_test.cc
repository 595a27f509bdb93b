// device::MemoryMeter on the CPU: the counting wrapper around LibTorch's CPU
// allocator sees a tensor's bytes when it is made and when it is freed,
// keeps the peak, and restarts the peak from what is live.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "device/memory.h"

namespace dtbench::device {
namespace {

TEST(CpuMemory, CountsAllocationsFreesAndThePeak) {
  auto meter = make_memory_meter(c10::Device(c10::kCPU));
  const auto base = meter->read();
  EXPECT_EQ(base.reserved_peak, -1);
  constexpr int64_t kBytes = 4 << 20;  // 1 Mi floats
  {
    auto a = torch::empty({kBytes / 4}, torch::kFloat);
    const auto with_a = meter->read();
    EXPECT_EQ(with_a.current - base.current, kBytes);
    {
      auto b = torch::ones({kBytes / 4}, torch::kFloat);
      EXPECT_EQ(meter->read().current - base.current, 2 * kBytes);
    }
    const auto after_b = meter->read();
    EXPECT_EQ(after_b.current - base.current, kBytes);
    EXPECT_GE(after_b.peak - base.current, 2 * kBytes);
    meter->reset_peak();
    EXPECT_EQ(meter->read().peak, meter->read().current);
  }
  EXPECT_EQ(meter->read().current, base.current);
  // A tensor made through an op (not just empty) is counted as well.
  auto c = torch::randn({256, 256}).matmul(torch::randn({256, 256}));
  EXPECT_GE(meter->read().peak - base.current, 3 * 256 * 256 * 4);
}

}  // namespace
}  // namespace dtbench::device
