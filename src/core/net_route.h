#pragma once
// Which local interface and address reach a given host: what the store
// clients, Gloo, TensorPipe and MPI bind to when the user gives no --iface
// (the kernel's own routing decision, as `ip route get ADDR` prints it).
// Torch-free, plain sockets.
#include <cstdint>
#include <string>
#include <vector>

namespace dtbench::net {

struct Route {
  std::string iface;       // e.g. "eth0", "veth-n1"; "" if no interface holds local_addr
  std::string local_addr;  // this host's source address toward the peer, e.g. "10.77.0.2"
};

// The route the kernel picks from this host to `host` (a name or address).
// Nothing is sent: a UDP socket is connected and asked for its local
// address. Throws UsageError naming `host` when it does not resolve or no
// route reaches it.
Route route_to(const std::string& host);

// The first IPv4 address (else IPv6) of interface `iface`. Throws
// UsageError when there is no such interface or it has no address.
std::string interface_address(const std::string& iface);

// This host's IPv4 addresses other than loopback, of interfaces that are
// up, in the kernel's order (may be empty).
std::vector<std::string> local_ipv4_addresses();

// A TCP port for a server about to start, where the server cannot bind port
// 0 and keep it (its number must travel first): free a moment ago on every
// local address, and chosen outside the kernel's ephemeral range
// (ip_local_port_range), so no outgoing connection can take it before the
// server binds it; only another explicit bind can, and that bind fails
// loudly. Where that range leaves no room (e.g. 1024-65535), the kernel's
// own choice of a free port. Throws IoError when none of 200 candidates is
// free.
int free_tcp_port();

// The kernel's ephemeral port range (/proc/sys/net/ipv4/ip_local_port_range;
// Linux's default 32768-60999 where unreadable).
struct PortRange {
  int first = 32768;
  int last = 60999;
};
PortRange ephemeral_ports();

// The `draw`-th candidate of free_tcp_port (pure): ports 20000-29999 below
// the ephemeral range's start when that leaves 1000 or more, else the ports
// from 32768 above its end (30000-32767 is Kubernetes' NodePort range);
// never 29400 or 29500 (torchrun's and torch's defaults, which other jobs
// take), never inside `ephemeral`. 0 when neither side leaves 1000 ports.
int port_candidate(const PortRange& ephemeral, std::uint64_t draw);

// Who "this host" is, for deciding same-host (shm) vs network paths and
// for counting nodes: host name + kernel boot id + network namespace.
std::string host_identity();

// This process's network namespace ("net:[4026531840]"), "" if unknown.
// Processes in different namespaces on one kernel cannot share abstract
// Unix sockets, so they are different hosts to the shm transport.
std::string namespace_id();

}  // namespace dtbench::net
