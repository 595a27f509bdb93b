#pragma once
// The one place that knows which backends exist in this build. Backends are
// rows in a table (name, availability, constructor); the #if guards for
// optional backends live in factory.cc and in each backend's folder only.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

struct BackendInfo {
  std::string name;
  bool built = false;       // compiled into this binary
  std::string version;      // library version string, when built
  std::string description;  // one line
  bool c10d_group = false;  // offers a c10d::ProcessGroup (what --reducer ddp needs)
};

// Every backend dtbench knows, built or not.
std::vector<BackendInfo> backends();

// Throws UsageError for an unknown backend or one not built in.
void require_backend(const std::string& name);

// Throws UsageError when `backend` cannot drive c10d::Reducer (--reducer ddp).
void require_c10d_group(const std::string& backend);

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
