#pragma once
// `dtbench hybrid`: one process's part in the DDP + RPC benchmark.
//   master (rank 0)   creates the tables on the servers, waits for the
//                     trainers, gathers their timings, and checks the final
//                     tables against a single-process reference that applies
//                     every trainer's logged updates to the initial tables
//   trainer (1..T)    per iteration: look its batch's rows up on the servers,
//                     run the FC stack under the `ddp` reducer (c10d::Reducer
//                     over a gloo group of the trainers), SGD the FC, send the
//                     embedding rows' gradients back
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
  std::vector<double> ceiling_seconds;  // raw TensorPipe round trips of every trainer at once, concatenated
  std::vector<double> ceiling_alone_seconds;  // trainer 0's, the other trainers waiting
  std::size_t ceiling_bytes = 0;        // bytes each way per round
  bool checked = false;
  double max_table_diff = std::numeric_limits<double>::quiet_NaN();
  double tolerance = 0;
  bool fc_replicas_identical = false;
  std::int64_t updates_logged = 0;
  std::string transport;
};

// Throws CommError/TimeoutError (a peer died or hung), VerificationError
// (tables differ from the reference, FC replicas differ), UsageError.
HybridRunResult run_hybrid(const launch::World& world, const HybridOptions& opts,
                           const comm::CommOptions& comm_opts);

}  // namespace dtbench::bench::hybrid
