#pragma once
// The `gloo` backend: c10d's ProcessGroupGloo (CPU tensors; CUDA tensors in
// CUDA builds). Rendezvous through the job's TCPStore.
#include <memory>

#include "comm/communicator.h"
#include "comm/factory.h"
#include "comm/store.h"

namespace dtbench::comm {

std::unique_ptr<Communicator> make_gloo_communicator(const launch::World& world,
                                                     const CommOptions& opts);
// Over a group of the job's ranks, through an existing store.
std::unique_ptr<Communicator> make_gloo_group_communicator(const launch::World& world,
                                                           const CommOptions& opts,
                                                           const Group& group);

}  // namespace dtbench::comm
