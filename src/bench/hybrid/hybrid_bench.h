#pragma once
// `dtbench hybrid`: one process's part in the DDP + RPC benchmark.
//   master (rank 0)   creates the tables on the servers, waits for the
//                     trainers, gathers their timings, and (--check) replays
//                     every server's event log on PyTorch's EmbeddingBag
//                     against the lookups the trainers received and the
//                     final tables (hybrid_check.h)
//   trainer (1..T)    per epoch of `batches` batches, each made inside the
//                     timed epoch: look the bags up on every server (pooled
//                     sums; one server after another, or all at once), run
//                     the FC stack with cross-entropy under the `ddp` reducer
//                     (c10d::Reducer over a gloo group of the trainers), send
//                     each server its gradient (the original's distributed
//                     backward), then step every server and the FC (its
//                     DistributedOptimizer)
//   server (T+1..)    EmbeddingServer
#include <limits>
#include <string>
#include <vector>

#include "bench/hybrid/hybrid_config.h"
#include "comm/factory.h"
#include "launch/topology.h"
#include "launch/world.h"
#include "report/hybrid_record.h"

namespace dtbench::bench::hybrid {

struct HybridRunResult {
  bool leader = false;  // master: the fields below are filled
  launch::Topology topology;  // which ranks share a node (every rank)
  std::vector<report::HybridTrainerRun> trainers;
  std::vector<double> ceiling_seconds;  // raw TensorPipe rounds of every trainer at once, concatenated
  std::vector<double> ceiling_alone_seconds;  // trainer 0's, the other trainers waiting
  std::size_t ceiling_bytes = 0;        // bytes each way per server per round
  bool checked = false;
  std::int64_t lookups_checked = 0, steps_checked = 0;
  double max_table_diff = std::numeric_limits<double>::quiet_NaN();
  double tolerance = 0;
  bool fc_replicas_identical = false;
  std::string transport;
};

// Throws CommError/TimeoutError (a peer died or hung), VerificationError
// (a lookup or a table differs from the replay, FC replicas differ),
// UsageError.
HybridRunResult run_hybrid(const launch::World& world, const HybridOptions& opts,
                           const comm::CommOptions& comm_opts);

}  // namespace dtbench::bench::hybrid
