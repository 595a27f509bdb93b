#include "bench/comm/clock_sync.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include <ATen/ATen.h>

#include "comm/communicator.h"

namespace dtbench::bench {
namespace {
constexpr int kTag = 7101;
}

double steady_now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

ClockSync sync_clocks(comm::Communicator& comm, const launch::Topology& topology, int rounds) {
  const int n = comm.size();
  ClockSync sync;
  sync.offset_us.assign(static_cast<std::size_t>(n), 0.0);
  if (n < 2 || topology.ranks() != n || topology.nodes() < 2) return sync;

  const int me = comm.rank();
  const int home = topology.node_of_rank[0];
  // Per node, rank 0's estimate of (node's clock - rank 0's), and the error.
  at::Tensor result = at::zeros({topology.nodes() + 1}, at::kDouble);
  for (int node = 0; node < topology.nodes(); ++node) {
    if (node == home) continue;
    const auto on = topology.ranks_on(node);
    if (on.empty()) continue;
    const int leader = on.front();
    if (me != 0 && me != leader) continue;
    double best_rtt = std::numeric_limits<double>::infinity(), best_offset = 0;
    auto ping = at::zeros({1}, at::kDouble);
    auto pong = at::zeros({1}, at::kDouble);
    for (int i = 0; i < rounds; ++i) {
      if (me == 0) {
        const double ta = steady_now_us();
        ping.fill_(ta);
        comm.send(ping, leader, kTag)->wait(comm.timeout());
        comm.recv(pong, leader, kTag)->wait(comm.timeout());
        const double tb = steady_now_us();
        if (tb - ta < best_rtt) {
          best_rtt = tb - ta;
          best_offset = pong.item<double>() - (ta + tb) / 2;
        }
      } else {
        comm.recv(ping, 0, kTag)->wait(comm.timeout());
        pong.fill_(steady_now_us());
        comm.send(pong, 0, kTag)->wait(comm.timeout());
      }
    }
    if (me == 0) {
      result[node] = best_offset;
      result[topology.nodes()] = std::max(result[topology.nodes()].item<double>(), best_rtt / 2);
    }
  }
  comm.broadcast(result, result, 0)->wait(comm.timeout());
  const auto* p = result.data_ptr<double>();
  for (int r = 0; r < n; ++r) sync.offset_us[static_cast<std::size_t>(r)] = p[topology.node_of_rank[r]];
  sync.error_us = p[topology.nodes()];
  return sync;
}

}  // namespace dtbench::bench
