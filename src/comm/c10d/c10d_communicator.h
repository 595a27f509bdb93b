#pragma once
// A Communicator over any c10d backend (ProcessGroupGloo, ProcessGroupNCCL):
// the collective calls, work handles and error translation they share. Each
// backend's folder (comm/gloo/, comm/nccl/) only rendezvouses and constructs
// its c10d backend, then hands it here with what differs.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "comm/communicator.h"
#include "comm/factory.h"
#include "comm/store.h"
#include "compat/c10d_backend.h"

namespace dtbench::comm {

struct C10dBackendSpec {
  // "gloo" or "nccl": prefixes every error line.
  std::string name;
  c10::intrusive_ptr<compat::C10dBackend> backend;
  // The job's store: where a failed rank's launcher publishes why.
  c10::intrusive_ptr<c10d::Store> store;
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{60000};
  // "" when the backend runs the collective on dtype with op, else why not.
  std::function<std::string(Collective, DType, ReduceOp)> unsupported;
  // "" when the collective is the backend's own, else what it is made of
  // (Communicator::composite_reason); empty function: all its own.
  std::function<std::string(Collective)> composite;
  // The c10d::ProcessGroup wrapping `backend`, for the Reducer; made on
  // first use.
  std::function<c10::intrusive_ptr<c10d::ProcessGroup>()> make_group;
  // Runs after a collective's wait() returned: NCCL's wait only orders the
  // current stream after the collective, so nccl blocks the host here until
  // the device has finished. Empty for gloo.
  std::function<void()> after_wait;
  // Poll the work for completion before calling its wait(timeout): set for
  // nccl, whose wait with a timeout checks once, then sleeps a whole
  // millisecond between checks (ProcessGroupNCCL's busy-wait), so every
  // collective not done at the first check would cost a millisecond or more.
  bool poll_completion = false;
  // True while the calling thread's stream is captured into a CUDA graph
  // (`comm -G`): waits then only order that stream (wrap_c10d_work). Set
  // for nccl; empty for gloo, which has nothing to capture.
  std::function<bool()> capturing;
  // Backends that take device tensors only (nccl): host tensors given to a
  // collective are copied to this device and the results back, so that
  // bookkeeping (timings, #wrong, replica hashes) runs on every backend.
  // Unset for gloo.
  std::optional<c10::Device> staging;
  // Collectives whose device tensors the backend cannot take (gloo: send,
  // recv, reduce_scatter, alltoall of CUDA tensors): such tensors go through
  // host memory the same way.
  std::set<Collective> host_only;
  // Collectives to call in c10d's flat-tensor form (_allgather_base,
  // _reduce_scatter_base: one output tensor, no per-rank list and no copy)
  // where the backend has it; `flat_host_only`: only for host tensors.
  std::set<Collective> flat;
  bool flat_host_only = false;
  // Whether a sendrecv's send and receive are issued as one group
  // (startCoalescing/endCoalescing: ncclGroupStart/End), as nccl-tests does.
  bool group_p2p = false;
  // Whether c10d's list forms of allgather and reduce_scatter take uneven
  // parts (ProcessGroupNCCL: grouped broadcasts and reduces), which
  // allgatherv and reduce_scatter_v then call; else (ProcessGroupGloo checks
  // that every part has one size) they are made of a broadcast per rank and
  // of an allreduce of a copy of the input (composite_reason says so).
  bool uneven_lists = false;
  // Runs when the communicator is destroyed: `clean` when no collective
  // failed and no exception is unwinding the stack. nccl shuts its backend
  // down (what Python's destroy_process_group does; clean) or aborts its
  // communicators (a failure: nothing waits on a dead peer). Empty for gloo.
  std::function<void(bool clean)> close;
};

std::unique_ptr<Communicator> make_c10d_communicator(C10dBackendSpec spec);

// What every c10d backend starts from: a spec with `name`, rank, size,
// timeout and store filled in for `group` (group.store null: the whole job,
// through a store of its own, connected here), and the prefix store the
// backend rendezvouses on ("<group prefix>/<name>", or "dtbench/<name>").
struct C10dRendezvous {
  C10dBackendSpec spec;
  c10::intrusive_ptr<c10d::Store> prefix;
};
C10dRendezvous c10d_rendezvous(const std::string& name, const launch::World& world,
                               const CommOptions& opts, const Group& group);

}  // namespace dtbench::comm
