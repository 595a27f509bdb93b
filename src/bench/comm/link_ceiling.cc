#include "bench/comm/link_ceiling.h"

#include <arpa/inet.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "comm/communicator.h"
#include "core/error.h"
#include "core/tcp_stream.h"

namespace dtbench::bench {
namespace {

// -1 where `ip` is not an IPv4 address.
std::int64_t ipv4_number(const std::string& ip) {
  in_addr a{};
  if (ip.empty() || inet_pton(AF_INET, ip.c_str(), &a) != 1) return -1;
  return static_cast<std::int64_t>(ntohl(a.s_addr));
}

std::string ipv4_text(std::int64_t n) {
  in_addr a{};
  a.s_addr = htonl(static_cast<std::uint32_t>(n));
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, text, sizeof(text));
  return text;
}

// Every rank's `mine` (k values each), rank after rank.
std::vector<double> gather(comm::Communicator& world, std::vector<double> mine) {
  const auto k = static_cast<std::int64_t>(mine.size());
  at::Tensor local = at::from_blob(mine.data(), {k}, at::kDouble).clone();
  at::Tensor all = at::zeros({k * world.size()}, at::kDouble);
  world.allgather(local, all)->wait(world.timeout());
  const auto* p = all.data_ptr<double>();
  return std::vector<double>(p, p + k * world.size());
}

// A leader's reason when only another leader could not listen.
constexpr const char* kSecondHand = "another node's first rank could not listen";

// Every rank's `mine`, cut to kReasonBytes bytes, rank after rank.
constexpr std::int64_t kReasonBytes = 240;
std::vector<std::string> gather_text(comm::Communicator& world, const std::string& mine) {
  at::Tensor local = at::zeros({kReasonBytes}, at::kByte);
  // Cut at a character boundary (the reason ends up in the JSON, which
  // must stay valid UTF-8), one byte short for the terminating zero.
  std::size_t n = std::min<std::size_t>(mine.size(), kReasonBytes - 1);
  while (n > 0 && n < mine.size() && (static_cast<unsigned char>(mine[n]) & 0xC0) == 0x80) --n;
  std::copy_n(mine.begin(), n, local.data_ptr<std::uint8_t>());
  at::Tensor all = at::zeros({kReasonBytes * world.size()}, at::kByte);
  world.allgather(local, all)->wait(world.timeout());
  std::vector<std::string> out;
  const auto* p = reinterpret_cast<const char*>(all.data_ptr<std::uint8_t>());
  for (int r = 0; r < world.size(); ++r) {
    const char* at = p + r * kReasonBytes;
    out.emplace_back(at, std::find(at, at + kReasonBytes, '\0'));
  }
  return out;
}

}  // namespace

double link_ceiling_gbs(comm::Communicator& world, const launch::Topology& topo, const std::string& local_ip,
                        double seconds, std::string* why) {
  const int nodes = topo.nodes();
  if (nodes < 2 || topo.ranks() != world.size()) return 0;
  const int me = world.rank();
  const int node = topo.node_of_rank[static_cast<std::size_t>(me)];
  const bool leader = topo.ranks_on(node).front() == me;
  // 1. Each leader listens and says where: [ip, port] per rank (-1: none).
  std::unique_ptr<net::StreamListener> listener;
  std::string failure;
  std::int64_t ip = leader ? ipv4_number(local_ip) : -1;
  if (leader && ip < 0) failure = local_ip.empty() ? "no address toward the other nodes" : local_ip + " is not IPv4";
  if (leader && ip >= 0) {
    try {
      listener = std::make_unique<net::StreamListener>(local_ip);
    } catch (const std::exception& e) {
      failure = e.what();
      ip = -1;
    }
  }
  const auto where =
      gather(world, {static_cast<double>(ip), static_cast<double>(listener ? listener->port() : 0)});
  auto leader_of = [&](int k) { return topo.ranks_on(k).front(); };
  bool all_listen = true;
  for (int k = 0; k < nodes; ++k) all_listen = all_listen && where[2 * static_cast<std::size_t>(leader_of(k))] >= 0;
  // 2. Every link at once: leader k sends to leader k+1 and receives from k-1.
  double rate = 0;
  if (all_listen && leader) {
    const int next = leader_of((node + 1) % nodes);
    const std::string next_ip = ipv4_text(static_cast<std::int64_t>(where[2 * static_cast<std::size_t>(next)]));
    const int next_port = static_cast<int>(where[2 * static_cast<std::size_t>(next) + 1]);
    std::string send_failure;
    std::thread sender([&] {
      try {
        net::send_stream(next_ip, next_port, seconds, world.timeout());
      } catch (const std::exception& e) {
        send_failure = e.what();
      }
    });
    try {
      rate = listener->receive(world.timeout());
    } catch (const std::exception& e) {
      failure = e.what();
    }
    sender.join();
    if (failure.empty() && !send_failure.empty()) failure = send_failure;
    if (!failure.empty()) rate = -1;
  }
  if (leader && !all_listen && failure.empty()) failure = kSecondHand;
  if (leader && !failure.empty()) rate = -1;
  // 3. The links' median, on every rank; none if any failed.
  const auto rates = gather(world, {rate});
  std::vector<double> links;
  bool failed = false;
  for (int k = 0; k < nodes; ++k) {
    const double r = rates[static_cast<std::size_t>(leader_of(k))];
    failed = failed || r <= 0;
    links.push_back(r);
  }
  if (failed) {
    // Every rank learns each failed link's reason from its node's first
    // rank (the same line wherever the report is written).
    // Only first-hand reasons when there are any: a leader that merely saw
    // another fail to listen adds nothing.
    const auto reasons = gather_text(world, leader ? failure : std::string());
    bool first_hand = false;
    for (int k = 0; k < nodes; ++k) first_hand = first_hand || reasons[leader_of(k)] != kSecondHand;
    std::string all;
    for (int k = 0; k < nodes; ++k) {
      const int r = leader_of(k);
      const std::string& reason = reasons[static_cast<std::size_t>(r)];
      if (rates[static_cast<std::size_t>(r)] > 0 || (first_hand && reason == kSecondHand)) continue;
      all += fmt::format("{}node {} ({}, rank {}): {}", all.empty() ? "" : "; ", k,
                         k < static_cast<int>(topo.node_hosts.size()) ? topo.node_hosts[k] : "?", r,
                         reason.empty() ? "could not measure its link" : reason);
    }
    if (why != nullptr) *why = all;
    return 0;
  }
  std::sort(links.begin(), links.end());
  const std::size_t n = links.size();
  const double median = n % 2 ? links[n / 2] : 0.5 * (links[n / 2 - 1] + links[n / 2]);
  return median / 1e9;
}

}  // namespace dtbench::bench
