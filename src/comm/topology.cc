#include "comm/topology.h"

#include <cstring>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "comm/communicator.h"
#include "comm/error_text.h"
#include "core/error.h"
#include "core/net_route.h"

namespace dtbench::comm {
namespace {

// Host identities travel as fixed-size int64 blocks (every backend
// allgathers int64); longer ones are cut, which only merges hosts whose
// first 255 characters agree.
constexpr std::int64_t kWords = 32;

}  // namespace

std::vector<std::string> gather_strings(Communicator& comm, const std::string& mine_text) {
  at::Tensor mine = at::zeros({kWords}, at::kLong);
  std::memcpy(mine.data_ptr(), mine_text.data(), std::min<std::size_t>(mine_text.size(), kWords * 8 - 1));
  at::Tensor all = at::zeros({kWords * comm.size()}, at::kLong);
  comm.allgather(mine, all)->wait(comm.timeout());
  std::vector<std::string> out;
  const char* bytes = static_cast<const char*>(all.data_ptr());
  for (int r = 0; r < comm.size(); ++r) out.emplace_back(bytes + r * kWords * 8);
  return out;
}

launch::Topology gather_topology(Communicator& comm) {
  return launch::topology_from_hosts(gather_strings(comm, net::host_identity()));
}

launch::Topology gather_topology(c10d::Store& store, int rank, int world_size,
                                 std::chrono::milliseconds timeout) {
  const std::string id = net::host_identity();
  store.set(fmt::format("dtbench/host/{}", rank), std::vector<std::uint8_t>(id.begin(), id.end()));
  std::vector<std::string> keys, ids;
  for (int r = 0; r < world_size; ++r) keys.push_back(fmt::format("dtbench/host/{}", r));
  try {
    store.wait(keys, timeout);
  } catch (const std::exception& e) {
    throw TimeoutError(fmt::format("not every rank reported its host within {} ms ({})",
                                   timeout.count(), one_line(e)));
  }
  for (const auto& k : keys) {
    const auto v = store.get(k);
    ids.emplace_back(v.begin(), v.end());
  }
  return launch::topology_from_hosts(ids);
}

}  // namespace dtbench::comm
