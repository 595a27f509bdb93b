#pragma once
// The ceiling of a collective between nodes ("is this normal?" across the
// network): each node's first rank streams raw TCP to the next node's first
// rank, every link of the ring at once (a ring collective's traffic), for a
// fixed time, each receiver timing its bytes from the first to the last. The
// collective's bus bandwidth between nodes is then read against it.
#include <string>

#include "launch/topology.h"

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::bench {

// Runs on every rank of `world` (ranks off the ring only join the
// exchanges). `local_ip`: this host's IPv4 address toward the others (""
// or not IPv4: no stream, and 0). Returns, on every rank, the median rate of
// the ring's links in GB/s; 0 with one node or when any link could not be
// measured (in *why, when given, on every rank: each failed link's node,
// its host, its first rank and that rank's reason, "node 1 (gpu7, rank 2):
// ..."; a leader that only saw another fail to listen is left out).
double link_ceiling_gbs(comm::Communicator& world, const launch::Topology& topo, const std::string& local_ip,
                        double seconds, std::string* why = nullptr);

}  // namespace dtbench::bench
