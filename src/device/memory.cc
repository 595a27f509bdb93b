#include "device/memory.h"

#include "build_config.h"  // DTBENCH_HAVE_CUDA
#include "device/cpu_memory_counter.h"
#if DTBENCH_HAVE_CUDA
#include "device/cuda_runtime.h"
#endif

namespace dtbench::device {
namespace {

class CpuMeter final : public MemoryMeter {
 public:
  void reset_peak() override { cpu_counter::reset_peak(); }
  MemoryStats read() const override {
    MemoryStats s;
    s.current = cpu_counter::current();
    s.peak = cpu_counter::peak();
    return s;
  }
};

#if DTBENCH_HAVE_CUDA
class CudaMeter final : public MemoryMeter {
 public:
  explicit CudaMeter(int index) : index_(index) {}
  void reset_peak() override { cuda::reset_peak_memory(index_); }
  MemoryStats read() const override { return cuda::memory_stats(index_); }

 private:
  int index_;
};
#endif

}  // namespace

void install_cpu_memory_counter() { cpu_counter::install(); }

std::unique_ptr<MemoryMeter> make_memory_meter(const c10::Device& device) {
#if DTBENCH_HAVE_CUDA
  if (device.is_cuda()) return std::make_unique<CudaMeter>(device.index());
#endif
  install_cpu_memory_counter();
  return std::make_unique<CpuMeter>();
}

}  // namespace dtbench::device
