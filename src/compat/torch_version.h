#pragma once
// The LibTorch version this build compiles against, and the one test of it
// that the rest of src/compat uses. Nothing outside src/compat tests
// TORCH_VERSION: it calls the helpers of the compat headers instead.
//   c10d_compat.h   Work, Gloo devices, TCPStore options, ProcessGroup wrapping
//   reducer_compat.h c10d::Reducer and DDP's bucket assignment
//   train_compat.h  CPU and CUDA autocast setters
//   optim_compat.h  where torch.optim.AdamW rounds differently (lerp, ** 0.5)
//   allocator_compat.h c10::Allocator (const allocate, copy_data)
//   dtype_compat.h  ATen's float8 types
#include <torch/csrc/api/include/torch/version.h>

#define DTBENCH_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||          \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace dtbench::compat {

// "1.13.0", "2.11.0": the LibTorch headers this binary was compiled with.
inline const char* torch_version() { return TORCH_VERSION; }

}  // namespace dtbench::compat
