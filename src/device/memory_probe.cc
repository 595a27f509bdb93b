// libdtbench_memory_probe.so: dtbench's CPU tensor counter
// (cpu_memory_counter.h) with a C interface, for a process dtbench does not
// own: a PyTorch peer loads it with ctypes after `import torch` (the same
// libc10) and before it makes its model, so both sides of a comparison count
// their tensors with the same code (bench/peers/torch_sharded.py
// --memory-probe; tests/device/memory_probe_test.py).
#include "device/cpu_memory_counter.h"

namespace cpu_counter = dtbench::device::cpu_counter;

extern "C" {

// 1 when the counter is installed, 0 when LibTorch's default CPU allocator
// is not one it can wrap.
int dtbench_memory_probe_install() {
  cpu_counter::install();
  return cpu_counter::installed() ? 1 : 0;
}
long long dtbench_memory_probe_current() { return cpu_counter::current(); }
long long dtbench_memory_probe_peak() { return cpu_counter::peak(); }
void dtbench_memory_probe_reset_peak() { cpu_counter::reset_peak(); }

}  // extern "C"
