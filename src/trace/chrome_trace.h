#pragma once
// Writes gathered timelines as a Chrome trace event file
// ({"traceEvents": [...]}, times in µs) that Perfetto (ui.perfetto.dev) and
// chrome://tracing open: one process per rank, named "rank R (node N, host)";
// thread 1 = the training thread (phases, casts, bucket-ready marks), the
// collectives as async slices "bucket B (N MiB float32)" from launch to
// completion, a "bytes in flight" counter per rank. Torch-free.
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/event.h"

namespace dtbench::trace {

struct ClockEstimate {
  double offset_us = 0;  // add to this rank's clock to get rank 0's (at at_us)
  double bound_us = 0;   // |error| of offset_us is at most this (half the best round trip)
  double at_us = 0;      // this rank's time the offset was measured at
  // How fast the offset changes: rank 0's clock gains drift_ppm µs per
  // second of this rank's on it (0: one estimate, or one clock).
  double drift_ppm = 0;
  double span_us = 0;  // this rank's time between the two estimates drift_ppm comes from (0: one)
  // Whether the drift moved the offset by more than the two estimates'
  // errors could (over a short run the apparent drift is mostly their noise).
  bool drift_beyond_error() const { return std::abs(drift_ppm) * 1e-6 * span_us > 2 * bound_us; }
  // The offset at this rank's time `local_us` (linear drift).
  double offset_at(double local_us) const { return offset_us + drift_ppm * 1e-6 * (local_us - at_us); }
};
// One estimate before the traced window and one after: the offset at the
// later one, drifting linearly between them; the larger error bound.
// Estimates less than a millisecond apart give no drift.
ClockEstimate interpolate(const ClockEstimate& before, const ClockEstimate& after);

struct TraceMeta {
  std::string label;                   // the run, e.g. "1N/2R" or a grid point
  std::vector<std::string> node_hosts;  // host of each node
  std::vector<ClockEstimate> clocks;    // per rank
  nlohmann::ordered_json other;         // analysis etc. ("otherData")
};

// Rank timelines on rank 0's clock (shifted so the first event is at 0).
nlohmann::ordered_json chrome_trace(const std::vector<RankTimeline>& ranks, const TraceMeta& meta);

}  // namespace dtbench::trace
