#pragma once
// Which rank stopped answering, under any launcher. A rank that is killed on
// another node, stopped (SIGSTOP, a debugger) or hung shows its peers only a
// closed connection or a timeout. dtbench's own launcher publishes what it
// saw (comm/store: publish_failure); torchrun, Slurm and mpirun publish
// nothing. So every rank that joined a job's store also beats: a thread
// bumps "dtbench/alive/<rank>" in the store every 500 ms over a connection
// of its own (the job's own connection may be busy in a blocking wait). A
// rank whose collective failed then looks for ranks whose beat stood still.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dtbench::comm {

// The job's store as connect_store reached it.
struct StoreEndpoint {
  std::string addr;
  int port = 0;
  std::string prefix;        // key prefix ("" or torchrun's attempt prefix)
  bool hosted_by_rank0 = true;  // false: torchrun's agent hosts it
};

// Starts this process's heartbeat for `rank` of `world_size` (replacing an
// earlier one). Best effort: a store that cannot be reached only means no
// beats (retried every beat). Stopped by stop_heartbeat (store_final_barrier
// and main() call it), else at exit. `keep` (the store this process hosts, if
// any) is released only after the heartbeat's own connection has closed: a
// store server that went away under a connected client made c10d's client
// thread throw "Connection reset by peer" and abort the process (seen in CI).
void start_heartbeat(const StoreEndpoint& at, int rank, int world_size,
                     std::shared_ptr<void> keep = nullptr);
// Stops the heartbeat and waits (at most 3 s: each store request in flight is
// bounded by 1 s) for its thread to finish, then releases `keep`. Returns
// false when the thread is still running (`keep` is then never released, and
// the caller must not run static destructors under the thread).
bool stop_heartbeat();

// One line naming the ranks (this one excluded) whose beat did not advance
// during `window` and that did not say they stopped on purpose (a rank
// marks itself gone when its heartbeat ends normally and when it calls
// this, i.e. when it is failing itself: so ranks that fail in a cascade
// after the first one are not named), each with the pid and host it claimed at rendezvous
// ("rank 3 (pid 8123 on node1) sent no heartbeat for 2.0 s: it is stopped,
// hung or dead"); or, when the store itself does not answer within
// `window`, a line saying so (naming rank 0 where it hosts the store); ""
// when every rank beats or no heartbeat runs. Blocks for about `window`.
std::string silent_ranks(std::chrono::milliseconds window);

// Pure: the ranks in `before`/`after` (beat counters, index = rank) whose
// counter did not advance, `self` excluded.
std::vector<int> stalled(const std::vector<std::int64_t>& before,
                         const std::vector<std::int64_t>& after, int self);

}  // namespace dtbench::comm
