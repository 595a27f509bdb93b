#pragma once
// The type c10d's process-group backends derive from: c10d::ProcessGroup in
// LibTorch 1.13, c10d::Backend (which a ProcessGroup dispatches to) since
// 2.0. Their collective calls have the same signatures in both.
#include <stdexcept>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "compat/torch_version.h"

namespace dtbench::compat {

// The work handle type c10d collectives return (c10d::Work since 1.13).
using C10dWork = c10d::Work;

#if DTBENCH_TORCH_AT_LEAST(2, 0)
using C10dBackend = c10d::Backend;
#else
using C10dBackend = c10d::ProcessGroup;
#endif

// Whether backends can group point-to-point calls into one (NCCL's
// ncclGroupStart/End through startCoalescing/endCoalescing, since 2.0).
inline constexpr bool has_coalescing() { return DTBENCH_TORCH_AT_LEAST(2, 0); }

// Issues the calls `issue` makes on `backend` as one group and returns the
// group's work. Throws std::logic_error where has_coalescing() is false.
template <typename Fn>
c10::intrusive_ptr<C10dWork> coalesced(C10dBackend& backend, Fn&& issue) {
#if DTBENCH_TORCH_AT_LEAST(2, 0)
  backend.startCoalescing();
  issue();
  return backend.endCoalescing();
#else
  (void)backend;
  (void)issue;
  throw std::logic_error("grouped point-to-point calls need LibTorch 2.0 or later");
#endif
}

}  // namespace dtbench::compat
