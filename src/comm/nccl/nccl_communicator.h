#pragma once
// The `nccl` backend: c10d's ProcessGroupNCCL on the GPU of the rank's
// LOCAL_RANK (CUDA tensors only). Built only in CUDA builds; comm/factory.cc
// lists it as "not built" elsewhere. Rendezvous through the job's TCPStore,
// after a check that no two ranks of one node share a GPU.
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/factory.h"
#include "comm/store.h"

namespace dtbench::comm {

std::unique_ptr<Communicator> make_nccl_communicator(const launch::World& world,
                                                     const CommOptions& opts);
// Over a group of the job's ranks (kvstore workers, hybrid trainers),
// through an existing store; each rank still takes its LOCAL_RANK's GPU.
std::unique_ptr<Communicator> make_nccl_group_communicator(const launch::World& world,
                                                           const CommOptions& opts,
                                                           const Group& group);
// The NCCL library LibTorch was built with ("2.28.9").
std::string nccl_library_version();

}  // namespace dtbench::comm
