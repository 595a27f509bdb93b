#pragma once
// Keeping replicas identical and proving it: coalesced broadcasts from rank
// 0, and a hash of every parameter's (and kept-in-step buffer's) bytes
// compared across ranks.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::train {

// The chunks broadcast_coalesced sends: indices into `tensors`, grouped by
// dtype (tensors of one dtype stay in order; a dtype's chunk closes when the
// next tensor of that dtype would take it past `chunk_bytes`; a tensor larger
// than that is a chunk alone). Interleaved dtypes (a batch norm's float
// statistics and int64 counter, layer after layer) still give one chunk per
// dtype, not one per run of equal dtypes. Chunks are ordered by their first
// tensor, so every rank computes the same list.
std::vector<std::vector<std::size_t>> coalesce_by_dtype(const std::vector<torch::Tensor>& tensors,
                                                       std::size_t chunk_bytes);

// Broadcasts `tensors` from `root` in the flat chunks coalesce_by_dtype
// gives (one collective per chunk), copying the result back in place.
void broadcast_coalesced(comm::Communicator& comm, const std::vector<torch::Tensor>& tensors,
                         std::size_t chunk_bytes, int root);

// 64-bit hash of the bytes of every parameter, in module order.
uint64_t parameter_hash(torch::nn::Module& module);
// The same over every buffer (batch-norm running statistics and counters).
uint64_t buffer_hash(torch::nn::Module& module);
std::string hex(uint64_t h);

// Compares this rank's parameter hash with every other rank's and, with
// `buffers` (the strategy keeps them in step: TrainResult::buffers_in_step),
// its buffer hash too. Throws VerificationError naming the ranks whose
// parameters or buffers differ from rank 0's. Returns the parameter hash.
uint64_t verify_replicas(comm::Communicator& comm, torch::nn::Module& module, bool buffers);

// Compares the hash of `tensors` (bytes, in order) across `comm`'s ranks:
// throws VerificationError naming `what` and the ranks whose differ from its
// rank 0's. A tensor-parallel group checks its replicated parameters and
// its loss with it.
void verify_same(comm::Communicator& comm, const std::vector<torch::Tensor>& tensors, const std::string& what);

}  // namespace dtbench::train
