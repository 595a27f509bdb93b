#pragma once
// A network level from a measured `dtbench comm` allreduce sweep: the
// latency per step from the smallest message, and the seconds per bus byte
// the rest of each size's time leaves (docs/metrics.md "Projection").
// Pure; torch-free.
#include <optional>
#include <string>
#include <vector>

#include "project/collective_model.h"
#include "report/comm_record.h"

namespace dtbench::project {

struct MeasuredPoint {
  double bytes = 0;    // allreduce message size
  double seconds = 0;  // its time (p50 or mean of the sweep)
};

// `points` of an allreduce sweep at `world` ranks (at least 2 ranks and 2
// sizes, any order). A ring of `world` ranks takes 2(world-1) steps, so
// latency_s = t(smallest) / 2(world-1); each size's seconds per bus byte is
// (t - 2(world-1) latency_s) / (bytes x 2(world-1)/world), never below 0.
// With `collective` "allgather" or "reduce_scatter" (bytes = the whole,
// gathered or scattered buffer, as nccl-tests and `dtbench comm` size them)
// the ring takes world-1 steps and moves (world-1)/world of the bytes.
// Throws UsageError naming `source` when the sweep cannot be fitted.
Level fit_level(std::vector<MeasuredPoint> points, int world, const std::string& source,
                const std::string& collective = "allreduce");

// Where latency gives way to bandwidth in a fitted level (`dtbench comm`'s
// footer): the ring's steps at `world` ranks (2(world-1) for allreduce,
// world-1 for allgather and reduce_scatter), the largest measured size whose
// transfer time (seconds per bus byte x bus bytes) is at most the steps'
// latency (0: none, bandwidth rules from the smallest size), and the bus
// rate at the largest size (bytes/s; 0 where its transfer time is 0).
struct LatencyBandwidth {
  int steps = 0;
  double latency_bound_bytes = 0;
  double largest_bytes = 0;
  double largest_bus_bw = 0;
};
LatencyBandwidth latency_bandwidth(const Level& level, int world, const std::string& collective);

// The fit of each allreduce, allgather and reduce_scatter sweep among
// `records` (a `dtbench comm` run's rows: the first cycle, the first group
// with --split), from the ranks' mean times of the in-place rows where there
// are any, else the out-of-place ones; sweeps of fewer than 2 sizes or 2
// ranks are left out. `world_size`: the ranks of a row without a group.
struct SweepFit {
  std::string collective, placement;
  int world = 0;
  double latency_s = 0;  // per step
  LatencyBandwidth lb;
};
std::vector<SweepFit> sweep_fits(const std::vector<report::CommRecord>& records, int world_size);

}  // namespace dtbench::project

namespace dtbench::project {

// What a `dtbench comm` report says about one level: the fitted Level and
// the world it was measured on.
struct MeasuredLevel {
  Level level;  // with cpu_util from the report's rows that have it
  // From the report's allgather / reduce_scatter rows, where it has them.
  std::optional<Level> all_gather, reduce_scatter;
  int world_size = 0;
  int nodes = 0;
  std::string backend;
};

// Reads the allreduce sweep of a comm report (and its allgather and
// reduce_scatter sweeps, where present): the in-place timings (a
// bucket is reduced in place; out-of-place adds a copy per operation and
// measured 2-6 ms more per allreduce over a capped link, docs/PERFORMANCE.md
// "Projection"), the out-of-place ones where the report has only
// those. Throws UsageError naming `path` and `flag` for a file that is not a
// comm report or has no usable allreduce.
MeasuredLevel level_from_comm_report(const std::string& path, const std::string& flag);

}  // namespace dtbench::project
