#include "core/net_route.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::net {
namespace {

std::string to_text(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof(buf));
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof(buf));
  return buf;
}

struct IfaddrsDeleter {
  void operator()(ifaddrs* p) const { freeifaddrs(p); }
};
using Ifaddrs = std::unique_ptr<ifaddrs, IfaddrsDeleter>;

Ifaddrs interfaces() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0)
    throw IoError(fmt::format("cannot list network interfaces: {}", std::strerror(errno)));
  return Ifaddrs(list);
}

}  // namespace

Route route_to(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), "9", &hints, &res);
  if (rc != 0)
    throw UsageError(fmt::format("master address '{}' does not resolve: {}", host, gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  std::string last_error = "no address";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    const bool ok = ::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
    if (!ok) last_error = std::strerror(errno);
    ::close(fd);
    if (!ok) continue;
    Route r;
    r.local_addr = to_text(reinterpret_cast<sockaddr*>(&local));
    const auto list = interfaces();
    for (ifaddrs* i = list.get(); i != nullptr; i = i->ifa_next)
      if (i->ifa_addr != nullptr && i->ifa_addr->sa_family == local.ss_family &&
          to_text(i->ifa_addr) == r.local_addr) {
        r.iface = i->ifa_name;
        break;
      }
    return r;
  }
  throw UsageError(fmt::format("no route from this host to the master address '{}': {}", host,
                               last_error));
}

std::string interface_address(const std::string& iface) {
  if (if_nametoindex(iface.c_str()) == 0)
    throw UsageError(fmt::format("--iface: no network interface named '{}' on this host", iface));
  std::string v6;
  const auto list = interfaces();
  for (ifaddrs* i = list.get(); i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || iface != i->ifa_name) continue;
    if (i->ifa_addr->sa_family == AF_INET) return to_text(i->ifa_addr);
    if (i->ifa_addr->sa_family == AF_INET6 && v6.empty()) v6 = to_text(i->ifa_addr);
  }
  if (v6.empty())
    throw UsageError(fmt::format("--iface {}: the interface has no IP address", iface));
  return v6;
}

std::vector<std::string> local_ipv4_addresses() {
  std::vector<std::string> out;
  const auto list = interfaces();
  for (ifaddrs* i = list.get(); i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    out.push_back(to_text(i->ifa_addr));
  }
  return out;
}

PortRange ephemeral_ports() {
  PortRange r;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    int first = 0, last = 0;
    if (std::fscanf(f, "%d %d", &first, &last) == 2 && first > 0 && last >= first && last <= 65535) {
      r.first = first;
      r.last = last;
    }
    std::fclose(f);
  }
  return r;
}

int port_candidate(const PortRange& ephemeral, std::uint64_t draw) {
  // Below: up to 29999 (30000-32767 is Kubernetes' NodePort range, which
  // kube-proxy redirects on a node); above: from 32768.
  constexpr int kLow = 20000, kLowEnd = 29999, kHigh = 32768, kMinSpan = 1000;
  int first = kLow, last = std::min(kLowEnd, ephemeral.first - 1);
  if (last - first + 1 < kMinSpan) {
    first = std::max(kHigh, ephemeral.last + 1);
    last = 65535;
  }
  if (last - first + 1 < kMinSpan) return 0;
  // splitmix64: successive draws spread over the whole range.
  std::uint64_t z = draw + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  const auto span = static_cast<std::uint64_t>(last - first + 1);
  int port = first + static_cast<int>(z % span);
  if (port == 29400 || port == 29500) port += 1;
  if (port > last) port = first;
  return port;
}

namespace {
bool can_bind(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw IoError(fmt::format("cannot open a socket to find a free port: {}", std::strerror(errno)));
  const int one = 1;  // as TCPStore's server binds: a port in TIME_WAIT is free to it
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}
}  // namespace

int free_tcp_port() {
  const auto range = ephemeral_ports();
  std::random_device rd;
  const std::uint64_t seed = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(getpid());
  for (std::uint64_t i = 0; i < 200; ++i) {
    const int port = port_candidate(range, seed + i);
    if (port == 0) break;  // the ephemeral range leaves no room: the kernel's choice below
    if (can_bind(port)) return port;
  }
  if (port_candidate(range, 0) == 0) {
    // ip_local_port_range covers (nearly) every port: a port the kernel
    // picks, as free as any (and as exposed to the race as any).
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof(a);
    const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    if (fd >= 0) ::close(fd);
    if (ok) return ntohs(a.sin_port);
  }
  throw IoError(fmt::format("no free TCP port found outside the ephemeral range {}-{} (200 tried)", range.first,
                            range.last));
}

std::string host_identity() {
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  std::string boot;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, boot);
  return std::string(name) + "/" + boot + "/" + namespace_id();
}

std::string namespace_id() {
  char buf[128] = {0};
  const ssize_t n = ::readlink("/proc/self/ns/net", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace dtbench::net
