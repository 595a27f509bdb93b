#pragma once
// What `dtbench comm` runs (collectives, sizes, iterations, checks), and the
// check of those options against a job; torch-free.
#include <string>
#include <vector>

#include "bench/comm/sweep.h"
#include "comm/types.h"
#include "launch/topology.h"

namespace dtbench::bench {

struct CommBenchOptions {
  // Collectives to run, in order. Default: allreduce.
  std::vector<comm::Collective> collectives{comm::Collective::kAllreduce};
  // Message sizes (see sweep.h).
  SweepOptions sweep;
  // Timed iterations per size. Default 20.
  int iters = 20;
  // Untimed iterations before timing. Default 5.
  int warmup = 5;
  // Verify results (#wrong). Default on.
  bool check = true;
  comm::DType dtype = comm::DType::kFloat32;
  comm::ReduceOp op = comm::ReduceOp::kSum;
  // Root rank of broadcast and reduce. Default 0.
  int root = 0;
  // Run the out-of-place / in-place variants. Default both.
  bool out_of_place = true;
  bool in_place = true;
  // Buffers on "cpu" or "cuda" (GPU `device_index`, the rank's LOCAL_RANK):
  // data is made and checked there. Default "cpu".
  std::string device = "cpu";
  int device_index = 0;
  // Which node each rank is on (comm::gather_topology); fills node_us.
  // Empty: no per-node times.
  launch::Topology topology;
};

// Checks the options against the job before anything runs: root within the
// world, iterations, the size sweep. Throws UsageError.
void validate_comm_options(const CommBenchOptions& opts, int world_size);

}  // namespace dtbench::bench
