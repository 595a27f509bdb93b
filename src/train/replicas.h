#pragma once
// Keeping replicas identical and proving it: coalesced broadcasts from rank
// 0, and a hash of every parameter's bytes compared across ranks.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::train {

// Broadcasts `tensors` from `root` in flat chunks of at most `chunk_bytes`
// (same dtype per chunk), copying the result back in place.
void broadcast_coalesced(comm::Communicator& comm, const std::vector<torch::Tensor>& tensors,
                         std::size_t chunk_bytes, int root);

// 64-bit hash of the bytes of every parameter, in module order.
uint64_t parameter_hash(torch::nn::Module& module);
std::string hex(uint64_t h);

// Compares this rank's parameter hash with every other rank's. Throws
// VerificationError naming the ranks that differ from rank 0. Returns the hash.
uint64_t verify_replicas(comm::Communicator& comm, torch::nn::Module& module);

}  // namespace dtbench::train
