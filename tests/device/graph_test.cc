// device.h's CUDA graph seam on the CPU: no graph can be captured there, so
// `comm -G` on host buffers is refused in one line naming the flag, and
// nothing is ever "capturing" (waits behave as always).
#include <gtest/gtest.h>

#include "core/error.h"
#include "device/device.h"

namespace dtbench::device {
namespace {

TEST(Graph, TheCpuCapturesNoGraph) {
  const c10::Device cpu(c10::DeviceType::CPU);
  bool ran = false;
  try {
    capture_graph(cpu, [&] { ran = true; });
    FAIL() << "capture_graph on the CPU returned";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--cuda-graph"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CPU"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(ran);
  EXPECT_FALSE(capturing(cpu));
}

}  // namespace
}  // namespace dtbench::device
