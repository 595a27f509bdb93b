#pragma once
// The type c10d's process-group backends derive from: c10d::ProcessGroup in
// LibTorch 1.13, c10d::Backend (which a ProcessGroup dispatches to) since
// 2.0. Their collective calls have the same signatures in both.
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

}  // namespace dtbench::compat
