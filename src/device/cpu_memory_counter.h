#pragma once
// The CPU side of device/memory.h: a counting wrapper around LibTorch's
// default CPU allocator (every tensor allocation and free; a peak kept).
// Torch headers only (c10), no dtbench library: memory_probe.cc puts the
// same counter into a Python process, so a PyTorch peer is measured by the
// code that measures dtbench (bench/peers/torch_sharded.py --memory-probe).
#include <cstdint>

namespace dtbench::device::cpu_counter {

// Registers the wrapper as the CPU allocator, once per process. Tensors
// allocated before are neither counted nor, when freed, subtracted.
void install();
bool installed();
// Bytes in counted tensors now; the most at once since the last reset.
std::int64_t current();
std::int64_t peak();
// The peak restarts from what is live now.
void reset_peak();

}  // namespace dtbench::device::cpu_counter
