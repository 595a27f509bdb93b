#pragma once
// The `gloo` backend: c10d's ProcessGroupGloo (CPU tensors; CUDA tensors in
// CUDA builds). Rendezvous through the job's TCPStore.
#include <memory>

#include "comm/communicator.h"
#include "comm/factory.h"

namespace dtbench::comm {

std::unique_ptr<Communicator> make_gloo_communicator(const launch::World& world,
                                                     const CommOptions& opts);

}  // namespace dtbench::comm
