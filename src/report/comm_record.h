#pragma once
// Records of `dtbench comm`: one per (collective, message size). Torch-free;
// filled by bench/comm, written by the reporters.
#include <cstdint>
#include <string>
#include <vector>

namespace dtbench::report {

// A timed iteration far beyond its rank's usual time (iteration_stats.h).
struct CommSpike {
  int rank = 0;
  int iter = 0;    // 0-based timed iteration
  double us = 0;   // its time
};

// --with-compute: the same placement timed again while a GEMM thread ran on
// every rank, and the GEMMs timed alone right after for as long.
struct CommWithCompute {
  bool ran = false;
  double time_us = 0;          // the collective's time with the GEMMs beside it (-a as the row's)
  double slowdown = 0;         // time_us / the row's time alone
  double gemm_us_alone = 0;    // median product time alone (the ranks' median)
  double gemm_us_during = 0;   // ... of the products during the timed iterations
  double gemm_slowdown = 0;    // gemm_us_during / gemm_us_alone
  int gemms_during = 0;        // products during the timed iterations (the fewest of any rank)
  int iters = 0;               // timed iterations beside the products: -n, or more where about four
                               // products would not end inside -n (bench::iterations_beside)
};

// CommTiming::wrong of a row whose results were not checked (-c 0): shown
// N/A, null in the JSON, an empty CSV cell; never counted as wrong or right.
inline constexpr std::int64_t kNotChecked = -1;

// One placement (out-of-place or in-place) of one size.
struct CommTiming {
  bool ran = false;            // false where the placement does not apply
  double time_us = 0;          // mean over ranks of each rank's mean time per iteration
  double algbw_gbs = 0;        // bytes / time_us / 1e3  (GB/s, 1 GB = 1e9 B)
  double busbw_gbs = 0;        // algbw * bus factor of the collective
  std::int64_t wrong = 0;      // elements that differ from the exact expected value, all ranks;
                               // kNotChecked under -c 0 (nccl-tests' N/A)
  // Percentiles of every rank's every timed iteration (pooled), at the
  // run's --percentiles (CommRecord::percentiles).
  std::vector<double> percentile_us;
  // Per-rank vectors (rank_us, lateness_us, samples_us) are indexed by the
  // row's ranks: the job's, or with --split its group's (CommRecord::
  // group_ranks); late_rank and spike_list hold job ranks.
  std::vector<double> rank_us; // every rank's mean time
  std::vector<double> node_us; // mean of rank_us over each node's ranks (launch::Topology)
  // Arrival: per rank, the median over iterations of when it started the
  // iteration minus when the median rank did (on the job's common clock);
  // positive = later. A synchronising collective ends on every rank
  // together, so a late rank slows every rank's time alike: lateness, not
  // time, names it.
  std::vector<double> lateness_us;
  int late_rank = -1;          // the (job) rank with the largest lateness
  double late_us = 0;          // its lateness
  bool straggler = false;      // late_us beyond what clocks and jitter explain
  std::int64_t spikes = 0;     // iterations beyond their rank's median + k * MAD
  std::vector<CommSpike> spike_list;              // the first of them (at most 16)
  std::vector<std::vector<double>> samples_us;    // [rank][iteration] times
  // Cores each rank's process kept busy during the timed iterations (CPU
  // seconds / wall seconds, every thread: the backend's included), mean over
  // ranks; -1 in reports written before it was measured.
  double cpu_util = -1;
  // "Is this normal?": the rate of a plain copy of the row's message in the
  // same memory (host memcpy, or device-to-device on a GPU), timed on each
  // rank in the same run beside the collective (median of its iterations,
  // then of the ranks'), GB/s; and busbw as a fraction of it. 0 where not
  // measured (reports written before it).
  double ceiling_gbs = 0;
  double of_ceiling = 0;
  // Between nodes, the link's: a raw TCP stream from each node's first rank
  // to the next node's, all at once, measured once per run (the links'
  // median, GB/s), and busbw's fraction of it; 0 where the row's ranks are
  // on one node.
  double link_gbs = 0;
  double of_link = 0;
  CommWithCompute with_compute;
};

struct CommRecord {
  int cycle = 0;            // pass over the whole sweep (--run-cycles), from 0
  // With --split: which group ran this row (from 0, groups ordered by their
  // lowest rank) and its ranks (job ranks); -1 and empty without a split.
  int group = -1;
  std::vector<int> group_ranks;
  std::string collective;   // "allreduce", ...
  std::uint64_t bytes = 0;  // message size as nccl-tests counts it (see docs/metrics.md)
  // Elements as nccl-tests counts them: the buffer's, or each rank's part
  // where the collective splits it (allgather, reduce_scatter, alltoall).
  std::uint64_t count = 0;
  std::string dtype;
  std::string op;           // reduction op, "none" for non-reductions
  int root = -1;            // root rank of broadcast/reduce, -1 otherwise
  std::vector<double> percentiles;  // the q of each CommTiming::percentile_us (e.g. 50, 99)
  CommTiming out_of_place;
  CommTiming in_place;
};

}  // namespace dtbench::report
