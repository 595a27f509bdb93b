#pragma once
// A clock every rank can compare start times on: each rank's steady clock
// (CLOCK_MONOTONIC, shared by the processes of one host) minus rank 0's,
// estimated per node by ping-pongs between rank 0 and the node's first rank
// (Cristian's method: the exchange with the shortest round trip; the error
// is at most half of it). Ranks on rank 0's node have offset 0 and no error.
#include <vector>

#include "launch/topology.h"

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::bench {

struct ClockSync {
  std::vector<double> offset_us;  // per rank: its clock minus rank 0's
  double error_us = 0;            // bound on any offset's error
};

// Microseconds on this rank's steady clock.
double steady_now_us();

// Collective: every rank calls it. Without a topology of every rank (or on
// one node) every offset is 0.
ClockSync sync_clocks(comm::Communicator& comm, const launch::Topology& topology, int rounds = 16);

}  // namespace dtbench::bench
