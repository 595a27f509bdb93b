#pragma once
// Rendezvous: rank 0 hosts a c10d::TCPStore at the master address; the other
// ranks connect to it. Every backend that needs a store (gloo, nccl) and the
// parameter-server roles find each other through it.
#include <chrono>
#include <exception>
#include <memory>
#include <string>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "comm/factory.h"
#include "launch/world.h"

namespace dtbench::comm {

// Connects to (rank 0: hosts) the job's store. Waits up to `timeout` for all
// ranks to join. Throws CommError with a one-line reason (port in use, master
// unreachable, ranks missing).
c10::intrusive_ptr<c10d::Store> connect_store(const launch::World& world,
                                              std::chrono::milliseconds timeout);

// The job's store hosted by dtbench's launcher, as torchrun's agent hosts
// one: bound before any worker starts (port 0: the kernel picks it, and it is
// kept, so no other process can take it between choice and use), and alive
// for the whole job, so a dead rank 0 takes neither the store nor the others'
// heartbeats and the published cause with it. Throws CommError when the port
// cannot be bound.
struct LauncherStore {
  std::shared_ptr<void> keep;  // the server; it stops when the last copy goes
  int port = 0;
  // What workers get as DTBENCH_AGENT_STORE (launch::LaunchOptions::
  // agent_store): this build's LibTorch version.
  std::string version;
};
LauncherStore host_launcher_store(int port);
// The DTBENCH_AGENT_STORE value for a launcher whose node-0 peer hosts the
// store (the other nodes of `dtbench launch --nnodes`).
std::string launcher_store_version();

// A subset of the job's ranks (the trainers of `dtbench hybrid`, the
// workers of `dtbench kvstore`), numbered 0..size-1, meeting through an
// existing store under their own key prefix.
struct Group {
  c10::intrusive_ptr<c10d::Store> store;
  std::string prefix;
  int rank = 0;
  int size = 1;
};

// A communicator over `group`. gloo and nccl serve any group; mpi only the whole
// job (MPI_COMM_WORLD). Throws UsageError otherwise.
std::unique_ptr<Communicator> make_group_communicator(const launch::World& world,
                                                      const CommOptions& opts,
                                                      const Group& group);

// Every one of `n` callers passes this point, or TimeoutError after
// `timeout`. `name` must be unique per barrier. With `progress`, the
// timeout counts from the last change of that counter (bumped with
// store.add(progress_key(progress), 1) by ranks still working): a long run
// passes, a stuck one fails.
void store_barrier(c10d::Store& store, const std::string& name, int n,
                   std::chrono::milliseconds timeout, const std::string& progress = "");
std::string progress_key(const std::string& progress);

// The job's last barrier: like store_barrier, and then the rank hosting the
// store (`host`) returns only after every rank has left the barrier, so no
// rank still waiting loses its connection when the store goes away.
void store_final_barrier(c10d::Store& store, const std::string& name, int n,
                         std::chrono::milliseconds timeout, bool host);

// Across nodes, the survivors of a failed rank see only a broken connection;
// the failed rank's launcher knows which rank died and how. It publishes
// that line in the job's store (best effort, at most `timeout`; false if the
// store could not be reached) ...
bool publish_failure(const std::string& master_addr, int master_port, const std::string& text,
                     std::chrono::milliseconds timeout);
// ... and a rank whose collective failed reads it: the first line any
// launcher published, or "" when none arrives within `wait` (or the store is
// unreachable). Never blocks longer than `wait` (+ a little).
std::string published_failure(const c10::intrusive_ptr<c10d::Store>& store,
                              std::chrono::milliseconds wait);

// What is known of why a peer failed: what a launcher published (the
// most precise: signal and node), else the ranks whose heartbeat stood still
// during `wait` (comm/liveness: works under any launcher), else "". Blocks
// for about `wait` when nothing was published.
std::string failure_cause(const c10::intrusive_ptr<c10d::Store>& store, std::chrono::milliseconds wait);

// `error` (a TimeoutError/CommError, kept as its type) with "; cause:
// <cause>" appended; other errors, an empty cause, or a message that already
// names a cause are returned as they are.
std::exception_ptr add_cause(std::exception_ptr error, const std::string& cause);
// add_cause with failure_cause (up to about 2 s), asked only for a
// TimeoutError/CommError: how the collectives and the RPC paths of kvstore
// and hybrid name a stopped or dead rank.
std::exception_ptr with_failure_cause(std::exception_ptr error,
                                        const c10::intrusive_ptr<c10d::Store>& store);

}  // namespace dtbench::comm
