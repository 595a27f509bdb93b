#pragma once
// Records of `dtbench comm`: one per (collective, message size). Torch-free;
// filled by bench/comm, written by the reporters.
#include <cstdint>
#include <string>
#include <vector>

namespace dtbench::report {

// One placement (out-of-place or in-place) of one size.
struct CommTiming {
  bool ran = false;            // false where the placement does not apply
  double time_us = 0;          // mean over ranks of each rank's mean time per iteration
  double algbw_gbs = 0;        // bytes / time_us / 1e3  (GB/s, 1 GB = 1e9 B)
  double busbw_gbs = 0;        // algbw * bus factor of the collective
  std::int64_t wrong = 0;      // elements that differ from the exact expected value, all ranks
  double min_rank_us = 0;      // fastest rank's mean time
  double max_rank_us = 0;      // slowest rank's mean time (the straggler)
  std::vector<double> rank_us; // every rank's mean time, indexed by rank
  std::vector<double> node_us; // mean of rank_us over each node's ranks (launch::Topology)
  // Cores each rank's process kept busy during the timed iterations (CPU
  // seconds / wall seconds, every thread: the backend's included), mean over
  // ranks; -1 in reports written before it was measured.
  double cpu_util = -1;
};

struct CommRecord {
  std::string collective;   // "allreduce", ...
  std::uint64_t bytes = 0;  // message size as nccl-tests counts it (see docs/metrics.md)
  std::uint64_t count = 0;  // bytes / element size
  std::string dtype;
  std::string op;           // reduction op, "none" for non-reductions
  int root = -1;            // root rank of broadcast/reduce, -1 otherwise
  CommTiming out_of_place;
  CommTiming in_place;
};

}  // namespace dtbench::report
