#pragma once
// What `dtbench comm` runs (collectives, sizes, iterations, checks), and the
// check of those options against a job; torch-free.
#include <cstdint>
#include <string>
#include <vector>

#include "bench/comm/iteration_stats.h"
#include "bench/comm/split.h"
#include "bench/comm/sweep.h"
#include "bench/comm/vsplit.h"
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
  // Root rank of broadcast, reduce, gather and scatter. Default 0.
  int root = 0;
  // Run the out-of-place / in-place variants. Default both.
  bool out_of_place = true;
  bool in_place = true;
  // Buffers on "cpu" or "cuda" (GPU `device_index`, the rank's LOCAL_RANK):
  // data is made and checked there. Default "cpu".
  std::string device = "cpu";
  int device_index = 0;
  // Test data seed (data.h); 0: rank 0 draws one per run. Each collective
  // and size derives its own from it.
  std::uint64_t seed = 0;
  // Percentiles of the pooled iteration times shown per row. Default p50, p99.
  std::vector<double> percentiles{50, 99};
  // An iteration is a spike beyond its rank's median + spike_mad * MAD
  // (iteration_stats.h). Default 5.
  double spike_mad = 5;
  // Passes over the whole sweep (nccl-tests' -N), to see drift. Default 1.
  int run_cycles = 1;
  // Operations per timed iteration (nccl-tests' -m, "aggregated
  // iterations"): issued back to back, each on its own buffer window, then
  // waited together; a sample is the iteration's time / agg_iters (the time
  // per operation). The check runs as many at once, each on its own data.
  // Default 1.
  int agg_iters = 1;
  // -z 1 (nccl-tests' --blocking): each of an iteration's agg_iters
  // operations is waited for (and the device synchronised) before the next
  // is issued, so none overlaps another. With agg_iters 1 every iteration
  // is waited for at its end anyway (each is a sample). Default off.
  bool blocking = false;
  // --concurrent K: the collective runs on K communicators over each
  // group's ranks at once, each on the next buffer window (sharing one
  // where fewer fit),
  // all issued before any is waited for; a sample is the time until all K
  // finished, and algbw/busbw count the K messages. Default 1.
  int concurrent = 1;
  // -G N (nccl-tests' --cudagraph): each placement's -n iterations are
  // captured once into a CUDA graph and the graph launched N times (plus
  // one untimed); a sample is one launch's time / (iters * agg_iters).
  // NCCL on a GPU only. 0: off (the default).
  int cuda_graph = 0;
  // -M: measure each rank's buffer bytes and allocator peak
  // (CommBenchResult::memory). Default off.
  bool memory_report = false;
  // --with-compute gemm:N: each placement of each size is timed again while
  // a thread of each rank multiplies N x N float32 matrices back to back,
  // then the products alone for as long (CommWithCompute). 0: off.
  std::int64_t compute_gemm = 0;
  // alltoallv's uneven parts (vsplit.h). Default uniform.
  VSplit vsplit;
  // Which time a row shows (and its algbw/busbw come from), as nccl-tests'
  // -a: kRank0 the group's first rank's mean, kAverage the mean over its
  // ranks (the default), kMin the fastest rank's, kMax the slowest's.
  RowTime average = RowTime::kAverage;
  // Groups that each run the collective at once (split.h); none by default.
  SplitSpec split;
  // A rank that sleeps this long before each timed iteration (a straggler
  // on purpose, to see what one looks like); -1: none.
  int delay_rank = -1;
  double delay_us = 0;
  // Which node each rank is on (comm::gather_topology); fills node_us.
  // Empty: no per-node times.
  launch::Topology topology;
  // With ranks on several nodes: this host's IPv4 address toward the others
  // (the link ceiling's raw TCP stream listens there; "" : none measured),
  // and how long each link streams. Default 0.5 s.
  std::string link_ip;
  double link_seconds = 0.5;
};

// Checks the options against the job before anything runs: root and delayed
// rank within the world, iterations, cycles, percentiles, the size sweep.
// Throws UsageError.
void validate_comm_options(const CommBenchOptions& opts, int world_size);

}  // namespace dtbench::bench
