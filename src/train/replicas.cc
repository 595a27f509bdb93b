#include "train/replicas.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <torch/torch.h>

#include "comm/communicator.h"
#include "core/error.h"

namespace dtbench::train {

std::vector<std::vector<std::size_t>> coalesce_by_dtype(const std::vector<torch::Tensor>& tensors,
                                                       std::size_t chunk_bytes) {
  struct Open {
    c10::ScalarType dtype;
    std::size_t chunk;  // index into `out`
    std::size_t bytes;
  };
  std::vector<std::vector<std::size_t>> out;
  std::vector<Open> open;  // the chunk each dtype is filling
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto dtype = tensors[i].scalar_type();
    const std::size_t bytes = tensors[i].nbytes();
    auto it = std::find_if(open.begin(), open.end(), [&](const Open& o) { return o.dtype == dtype; });
    if (it != open.end() && it->bytes + bytes <= chunk_bytes) {
      out[it->chunk].push_back(i);
      it->bytes += bytes;
      continue;
    }
    out.push_back({i});
    if (it == open.end())
      open.push_back({dtype, out.size() - 1, bytes});
    else
      *it = {dtype, out.size() - 1, bytes};
  }
  return out;
}

void broadcast_coalesced(comm::Communicator& comm, const std::vector<torch::Tensor>& tensors,
                         std::size_t chunk_bytes, int root) {
  torch::NoGradGuard no_grad;
  for (const auto& chunk : coalesce_by_dtype(tensors, chunk_bytes)) {
    std::vector<torch::Tensor> flat_parts;
    for (std::size_t i : chunk) flat_parts.push_back(tensors[i].reshape({-1}));
    auto flat = torch::cat(flat_parts);
    comm.broadcast(flat, flat, root)->wait(comm.timeout());
    if (comm.rank() == root) continue;  // root's tensors already hold what it sent
    int64_t offset = 0;
    for (std::size_t i : chunk) {
      const auto& t = tensors[i];
      t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

namespace {

// FNV-1a over 8-byte words (then the tail bytes) of each tensor.
uint64_t hash_tensors(const std::vector<torch::Tensor>& tensors) {
  uint64_t h = 1469598103934665603ULL;
  constexpr uint64_t kPrime = 1099511628211ULL;
  for (const auto& p : tensors) {
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

}  // namespace

uint64_t parameter_hash(torch::nn::Module& module) { return hash_tensors(module.parameters()); }

uint64_t buffer_hash(torch::nn::Module& module) { return hash_tensors(module.buffers()); }

std::string hex(uint64_t h) { return fmt::format("{:016x}", h); }

namespace {

// Gathers each rank's `mine` hashes; returns, for each slot, the ranks whose
// value differs from rank 0's ("" when none) and rank 0's value.
std::vector<std::pair<std::string, uint64_t>> differing_ranks(comm::Communicator& comm,
                                                             const std::vector<uint64_t>& mine_hashes) {
  const auto k = static_cast<int64_t>(mine_hashes.size());
  auto mine = torch::empty({k}, torch::kLong);
  std::memcpy(mine.data_ptr<int64_t>(), mine_hashes.data(), 8 * mine_hashes.size());
  auto all = torch::empty({k * comm.size()}, torch::kLong);
  comm.allgather(mine, all)->wait(comm.timeout());
  const auto* v = all.data_ptr<int64_t>();
  std::vector<std::pair<std::string, uint64_t>> out;
  for (int64_t what = 0; what < k; ++what) {
    std::string bad;
    for (int r = 1; r < comm.size(); ++r)
      if (v[k * r + what] != v[what]) bad += fmt::format("{}{}", bad.empty() ? "" : ",", r);
    uint64_t h0;
    std::memcpy(&h0, &v[what], 8);
    out.emplace_back(bad, h0);
  }
  return out;
}

}  // namespace

uint64_t verify_replicas(comm::Communicator& comm, torch::nn::Module& module, bool buffers) {
  const uint64_t h = parameter_hash(module);
  if (comm.size() == 1) return h;
  const auto diffs = differing_ranks(comm, {h, buffers ? buffer_hash(module) : 0});
  for (int what = 0; what < (buffers ? 2 : 1); ++what) {
    const auto& [bad, h0] = diffs[what];
    if (bad.empty()) continue;
    throw VerificationError(fmt::format(
        "replicas differ: the {} of rank(s) {} are not bitwise identical to rank 0's (hash {})",
        what == 0 ? "parameters" : "buffers (batch-norm running statistics)", bad, hex(h0)));
  }
  return h;
}

void verify_same(comm::Communicator& comm, const std::vector<torch::Tensor>& tensors, const std::string& what) {
  if (comm.size() == 1) return;
  const auto [bad, h0] = differing_ranks(comm, {hash_tensors(tensors)})[0];
  if (!bad.empty())
    throw VerificationError(fmt::format("{} differ: rank(s) {} of the group are not bitwise identical to its rank 0 "
                                        "(hash {})",
                                        what, bad, hex(h0)));
}

}  // namespace dtbench::train
