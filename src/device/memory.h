#pragma once
// Memory a rank's tensors take on its device, from the allocator itself
// rather than RSS: on the CPU a counting wrapper dtbench installs around
// LibTorch's CPU allocator (every tensor allocation and free), on a GPU the
// CUDA caching allocator's own statistics. Device-specific code stays behind
// this header (memory.cc; the CUDA part in cuda_runtime.cc).
#include <cstdint>
#include <memory>

#include <c10/core/Device.h>

namespace dtbench::device {

struct MemoryStats {
  // Bytes in live tensors now, and the most at once since the last reset.
  std::int64_t current = 0;
  std::int64_t peak = 0;
  // GPU: the caching allocator's reserved bytes at their peak (what
  // nvidia-smi shows, fragmentation included); -1 on the CPU.
  std::int64_t reserved_peak = -1;
};

class MemoryMeter {
 public:
  virtual ~MemoryMeter() = default;
  // The peak restarts from what is live now (after warm-up).
  virtual void reset_peak() = 0;
  virtual MemoryStats read() const = 0;
};

// Puts the counting wrapper in front of LibTorch's CPU allocator, once per
// process. Tensors allocated before are neither counted nor, when freed,
// subtracted: call it before the model is made.
void install_cpu_memory_counter();

// The meter of `device` (the CPU one installs the counter if needed).
std::unique_ptr<MemoryMeter> make_memory_meter(const c10::Device& device);

}  // namespace dtbench::device
