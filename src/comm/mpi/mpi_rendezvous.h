#pragma once
// gloo/nccl under mpirun without MASTER_ADDR: rank 0 tells every rank,
// through MPI itself, an address of its own that they can reach and a free
// port for the store (compiled only with MPI; comm::resolve_master calls it).
#include <chrono>
#include <string>

#include "launch/world.h"

namespace dtbench::comm {

// Collective over MPI_COMM_WORLD: initialises MPI for the exchange (and
// finalises it again unless it was initialised before). Returns `world`
// with master_addr and, unless MASTER_PORT was given, master_port set:
// loopback when every rank is on rank 0's host; else rank 0's address on
// `iface` or, without one, the source address of its route to the first
// rank on another host (one of that host's addresses, exchanged here).
// Throws CommError when MPI fails or no other host published an address.
// A call that makes no progress for `timeout` (a rank stopped or never
// started) ends the job with one line and MPI_Abort (mpi_abort.h).
launch::World publish_master_over_mpi(launch::World world, const std::string& iface,
                                      std::chrono::milliseconds timeout);

}  // namespace dtbench::comm
