#pragma once
// The one place that makes a backend's communicator. Backends are rows in a
// table (comm/backends.h's name and availability, the library's version, the
// constructor); the #if guards for optional backends live in factory.cc and
// in each backend's folder only.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/backends.h"
#include "launch/world.h"

namespace dtbench::comm {

class Communicator;

struct CommOptions {
  // Backend name: "gloo", "mpi" or "nccl". Default "gloo".
  std::string backend = "gloo";
  // Bound on every wait: store rendezvous, collectives, barrier. Default 60 s.
  std::chrono::milliseconds timeout{60000};
  // Network interface for gloo traffic ("" = loopback when the master address
  // is loopback, else the interface of this host's name). Default "".
  std::string iface;
  // Gloo worker threads per process group. Default 2.
  int gloo_threads = 2;
};

// Every backend dtbench knows, built or not, with its library's version
// (comm/backends.h's list; require_backend and require_c10d_group are there).
std::vector<BackendInfo> backends();

// Creates the communicator for this rank. Throws UsageError (unknown backend,
// bad interface) or CommError (rendezvous failed).
// Under mpirun (or another MPI launcher) without MASTER_ADDR, for a backend
// that needs a store (gloo, nccl): every rank learns rank 0's reachable
// address and a free port through MPI (collective). Otherwise `world` as is.
launch::World resolve_master(const launch::World& world, const CommOptions& opts);

std::unique_ptr<Communicator> make_communicator(const launch::World& world,
                                                const CommOptions& opts);

// Versions of LibTorch and each built-in backend, for `dtbench env`.
nlohmann::ordered_json library_versions();

}  // namespace dtbench::comm
