#include "train/replicas.h"

#include <cstring>

#include <fmt/format.h>
#include <torch/torch.h>

#include "comm/communicator.h"
#include "core/error.h"

namespace dtbench::train {

void broadcast_coalesced(comm::Communicator& comm, const std::vector<torch::Tensor>& tensors,
                         std::size_t chunk_bytes, int root) {
  torch::NoGradGuard no_grad;
  std::size_t i = 0;
  while (i < tensors.size()) {
    // One chunk: consecutive tensors of one dtype up to chunk_bytes.
    std::vector<torch::Tensor> chunk{tensors[i]};
    std::size_t bytes = tensors[i].nbytes();
    std::size_t j = i + 1;
    while (j < tensors.size() && tensors[j].scalar_type() == tensors[i].scalar_type() &&
           bytes + tensors[j].nbytes() <= chunk_bytes) {
      bytes += tensors[j].nbytes();
      chunk.push_back(tensors[j]);
      ++j;
    }
    std::vector<torch::Tensor> flat_parts;
    for (const auto& t : chunk) flat_parts.push_back(t.reshape({-1}));
    auto flat = torch::cat(flat_parts);
    comm.broadcast(flat, flat, root)->wait(comm.timeout());
    int64_t offset = 0;
    for (auto& t : chunk) {
      t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
    i = j;
  }
}

uint64_t parameter_hash(torch::nn::Module& module) {
  // FNV-1a over 8-byte words (then the tail bytes) of each parameter.
  uint64_t h = 1469598103934665603ULL;
  constexpr uint64_t kPrime = 1099511628211ULL;
  for (const auto& p : module.parameters()) {
    const auto c = p.detach().to(torch::kCPU).contiguous();
    const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
    const std::size_t n = c.nbytes();
    std::size_t k = 0;
    for (; k + 8 <= n; k += 8) {
      uint64_t w;
      std::memcpy(&w, bytes + k, 8);
      h = (h ^ w) * kPrime;
    }
    for (; k < n; ++k) h = (h ^ bytes[k]) * kPrime;
    h = (h ^ n) * kPrime;  // tensor boundary
  }
  return h;
}

std::string hex(uint64_t h) { return fmt::format("{:016x}", h); }

uint64_t verify_replicas(comm::Communicator& comm, torch::nn::Module& module) {
  const uint64_t h = parameter_hash(module);
  if (comm.size() == 1) return h;
  int64_t signed_h;
  std::memcpy(&signed_h, &h, 8);
  auto mine = torch::full({1}, signed_h, torch::kLong);
  auto all = torch::empty({comm.size()}, torch::kLong);
  comm.allgather(mine, all)->wait(comm.timeout());
  const auto* v = all.data_ptr<int64_t>();
  std::string bad;
  for (int r = 1; r < comm.size(); ++r)
    if (v[r] != v[0]) bad += fmt::format("{}{}", bad.empty() ? "" : ",", r);
  if (!bad.empty()) {
    uint64_t h0;
    std::memcpy(&h0, &v[0], 8);
    throw VerificationError(fmt::format(
        "replicas differ: the parameters of rank(s) {} are not bitwise identical to rank 0's "
        "(hash {})",
        bad, hex(h0)));
  }
  return h;
}

}  // namespace dtbench::train
