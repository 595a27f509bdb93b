#pragma once
// Rendezvous: rank 0 hosts a c10d::TCPStore at the master address; the other
// ranks connect to it. Every backend that needs a store (gloo, nccl) and the
// parameter-server roles find each other through it.
#include <chrono>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "launch/world.h"

namespace dtbench::comm {

// Connects to (rank 0: hosts) the job's store. Waits up to `timeout` for all
// ranks to join. Throws CommError with a one-line reason (port in use, master
// unreachable, ranks missing).
c10::intrusive_ptr<c10d::Store> connect_store(const launch::World& world,
                                              std::chrono::milliseconds timeout);

}  // namespace dtbench::comm
