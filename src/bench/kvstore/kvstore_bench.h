#pragma once
// `dtbench kvstore`: one process's part in a parameter-server bandwidth run.
// Ranks 0..W-1 are workers, W..W+K-1 servers (kv_config.h). Servers publish
// their TensorPipe addresses in the job's store; workers look them up,
// connect, and run the iterations in step (a store barrier before the first);
// results travel back to worker 0 (rank 0) through the store.
#include <functional>
#include <string>
#include <vector>

#include "bench/kvstore/kv_config.h"
#include "bench/kvstore/kv_server.h"
#include "comm/factory.h"
#include "launch/topology.h"
#include "launch/world.h"
#include "report/kvstore_record.h"

namespace dtbench::bench::kv {

struct KvRunResult {
  bool leader = false;  // rank 0: the fields below are filled
  KvLayout layout;
  std::vector<std::vector<report::KvIteration>> workers;  // per worker
  std::vector<double> ceiling_seconds;  // raw TensorPipe echo rounds of every worker, concatenated
  double ceiling_bytes = 0;             // bytes one round moves
  double final_error = std::numeric_limits<double>::quiet_NaN();  // dist_async end check
  std::vector<KvServerStats> servers;
  std::string transport;  // what the RPC used, for the report
  launch::Topology topology;  // which ranks share a node (every rank)
};

// Runs this rank's role. `on_iteration` is called on rank 0 after each of
// its timed iterations. Throws CommError/TimeoutError (a peer died or hung),
// VerificationError (wrong values) or UsageError.
KvRunResult run_kvstore(const launch::World& world, const KvOptions& opts,
                        const comm::CommOptions& comm_opts,
                        const std::function<void(const report::KvIteration&)>& on_iteration);

}  // namespace dtbench::bench::kv
