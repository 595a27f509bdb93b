#pragma once
// ProcessGroupNCCL across LibTorch versions. Only CUDA builds (the wheel
// flavour, LibTorch >= 2.0) include this header: Debian's 1.13 has no CUDA.
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1  // what the wheel's own build defines for these headers
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "compat/torch_version.h"

#if !DTBENCH_TORCH_AT_LEAST(2, 0)
#error "the nccl backend is written against LibTorch >= 2.0 (ProcessGroupNCCL as a c10d::Backend)"
#endif

namespace dtbench::compat {

inline c10::intrusive_ptr<c10d::ProcessGroupNCCL::Options> nccl_options(std::chrono::milliseconds timeout) {
  auto o = c10d::ProcessGroupNCCL::Options::create();
  o->timeout = timeout;
  return o;
}

// The c10d::ProcessGroup the Reducer takes, dispatching CUDA tensors to NCCL.
inline c10::intrusive_ptr<c10d::ProcessGroup> nccl_process_group(
    const c10::intrusive_ptr<c10d::ProcessGroupNCCL>& nccl,
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  pg->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
  pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL, nccl);
  return pg;
}

// Binds the backend to the rank's GPU and creates its NCCL communicator now,
// as init_process_group(device_id=...) does: barriers use that GPU instead of
// guessing one from the rank, and a failure shows at start-up.
inline void nccl_bind_and_connect(c10d::ProcessGroupNCCL& pg, const c10::Device& gpu) {
  pg.setBoundDeviceId(gpu);
  pg.eagerConnectSingleDevice(gpu);
}

// End of the backend's life: shutdown() waits for queued NCCL work and
// destroys the communicators (Python's destroy_process_group; without it
// 2.x warns at exit); abort() tears them down without waiting, for a job
// whose collectives failed.
inline void nccl_close(c10d::ProcessGroupNCCL& pg, bool clean) {
  if (clean)
    pg.shutdown();
  else
    pg.abort();
}

inline std::string nccl_version() { return c10d::getNcclVersion(); }

}  // namespace dtbench::compat
