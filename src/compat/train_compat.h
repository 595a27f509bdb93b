#pragma once
// Training-loop differences between LibTorch 1.13 and 2.x: the autocast
// setters and getters (CPU and CUDA).
#include <ATen/autocast_mode.h>

#include "compat/torch_version.h"

namespace dtbench::compat {

// CPU autocast on or off, with its lower-precision dtype. 2.4 replaced the
// per-device setters with ones taking the device type.
inline void set_cpu_autocast(bool enabled, at::ScalarType dtype) {
#if DTBENCH_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(at::kCPU, dtype);
  at::autocast::set_autocast_enabled(at::kCPU, enabled);
#else
  at::autocast::set_autocast_cpu_dtype(dtype);
  at::autocast::set_cpu_enabled(enabled);
#endif
  if (!enabled) at::autocast::clear_cache();
}

// CUDA autocast on or off (CUDA builds only run it; LibTorch 1.13 calls it
// the "gpu" autocast).
inline void set_cuda_autocast(bool enabled, at::ScalarType dtype) {
#if DTBENCH_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(at::kCUDA, dtype);
  at::autocast::set_autocast_enabled(at::kCUDA, enabled);
#else
  at::autocast::set_autocast_gpu_dtype(dtype);
  at::autocast::set_enabled(enabled);
#endif
  if (!enabled) at::autocast::clear_cache();
}

// Whether CPU / CUDA autocast is on now, and its lower-precision dtype
// (activation checkpointing recomputes under the forward's state).
inline bool cpu_autocast_enabled() {
#if DTBENCH_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(at::kCPU);
#else
  return at::autocast::is_cpu_enabled();
#endif
}
inline at::ScalarType cpu_autocast_dtype() {
#if DTBENCH_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(at::kCPU);
#else
  return at::autocast::get_autocast_cpu_dtype();
#endif
}
inline bool cuda_autocast_enabled() {
#if DTBENCH_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(at::kCUDA);
#else
  return at::autocast::is_enabled();
#endif
}
inline at::ScalarType cuda_autocast_dtype() {
#if DTBENCH_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(at::kCUDA);
#else
  return at::autocast::get_autocast_gpu_dtype();
#endif
}

}  // namespace dtbench::compat
