#pragma once
// Gathering the job's launch::Topology (which ranks share a node): through
// a communicator (comm, ddp: any backend) or through the job's store
// (kvstore, hybrid). Collective: every rank calls it; every rank gets it.
#include <chrono>
#include <string>
#include <vector>

#include <c10/util/intrusive_ptr.h>

#include "launch/topology.h"

namespace c10d {
class Store;
}

namespace dtbench::comm {

class Communicator;

launch::Topology gather_topology(Communicator& comm);

// Every rank's `mine` (its first 255 characters), indexed by rank.
std::vector<std::string> gather_strings(Communicator& comm, const std::string& mine);

launch::Topology gather_topology(c10d::Store& store, int rank, int world_size,
                                 std::chrono::milliseconds timeout);

}  // namespace dtbench::comm
