#pragma once
// What a timeline says (docs/metrics.md "Trace analysis"): per rank and
// iteration the compute, communication, overlap, exposed communication and
// idle time on merged intervals; per bucket the ready -> launch delay, the
// collective's duration and how much of it computation hid; per collective
// how late each rank launched it (stragglers). Pure functions of the events.
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "trace/event.h"

namespace dtbench::trace {

struct Interval {
  double begin = 0, end = 0;
};
// Sorted, with overlapping and touching intervals joined; empty ones dropped.
std::vector<Interval> merge(std::vector<Interval> v);
// The parts of merged `a` outside merged `b` (merged).
std::vector<Interval> subtract(const std::vector<Interval>& a, const std::vector<Interval>& b);
// Total length of merged intervals.
double length(const std::vector<Interval>& merged);
// Length of the intersection of two merged interval lists.
double intersection(const std::vector<Interval>& a, const std::vector<Interval>& b);

// When the last rank launched each collective and all-gather that every
// rank launched, by (kind, iteration, bucket, n: its n-th launch in that
// iteration, as FSDP gathers a unit in forward and again in backward): the
// point where a rank's span of it stops waiting for a later rank and starts
// moving data.
using LaunchKey = std::tuple<int, int, int, int>;
using LastLaunches = std::map<LaunchKey, double>;
LastLaunches last_launches(const std::vector<RankTimeline>& ranks);

// One rank's iteration. Times in microseconds.
struct IterationBreakdown {
  int rank = 0, iteration = 0;
  double wall = 0;       // the iteration's span
  // |forward ∪ backward's compute ∪ optimizer ∪ casts| less the time the
  // model's thread spent inside launching calls (a blocking collective)
  double compute = 0;
  double comm = 0;       // |collectives ∪ buffer broadcast|
  double overlapped = 0; // |comm ∩ compute|
  double exposed = 0;    // comm - overlapped
  double idle = 0;       // wall - |compute ∪ comm|
  // comm split at each collective's last launch (given `last`): waiting =
  // the time in which the rank's collectives only waited for a later rank
  // to launch them (|∪ [launch, last launch]| outside every moving part),
  // moving = comm - waiting (broadcasts, stages and collectives not seen on
  // every rank count as moving). Without `last`: waiting 0, moving = comm.
  double comm_waiting = 0;
  double comm_moving = 0;
  // idle by where it lies (they add up to idle): inside --inject-delay's
  // sleep; inside backward while neither computing nor communicating (the
  // Reducer's hooks and bucket copies, launching calls); inside the wait
  // after backward with nothing in flight; between the phases (the loop,
  // before forward, after the optimizer).
  double idle_delay = 0, idle_in_backward = 0, idle_in_comm_wait = 0, idle_between = 0;
  double overlap() const { return comm > 0 ? overlapped / comm : 0; }
};
// `events` of one rank; one breakdown per kIteration event; `last`: every
// rank's last launches (last_launches), to split comm.
std::vector<IterationBreakdown> breakdown(const RankTimeline& t, const LastLaunches& last = {});

struct BucketStats {
  int bucket = 0;
  std::int64_t bytes = 0;
  int samples = 0;                 // rank-iterations seen
  double ready_to_launch_p50 = 0;  // µs (no ready mark: not counted)
  // µs from the start of backward's compute to the ready mark (no
  // backward-compute span or ready mark: not counted); -1 if never seen.
  double ready_after_backward_p50 = -1;
  double duration_p50 = 0;         // launch -> done, µs
  // The duration split at the last rank's launch, µs (medians over the
  // rank-iterations where every rank launched it): launch -> last launch
  // (waiting for a later rank), last launch -> done (moving). 0 / the
  // duration's median when no collective was seen on every rank.
  double waiting_p50 = 0, moving_p50 = 0;
  double hidden = 0;               // Σ |collective ∩ compute| / Σ duration
};
std::vector<BucketStats> bucket_stats(const std::vector<RankTimeline>& ranks);

// Median over rank-iterations of backward's compute span (start of backward
// to its last gradient), µs; -1 when the timelines hold none.
double backward_compute_p50(const std::vector<RankTimeline>& ranks);

struct RankLateness {
  int rank = 0, node = 0;
  int collectives = 0;
  double last_share = 0;       // share of collectives this rank launched last
  double mean_late_us = 0;     // mean of launch - earliest launch
  int latest_iterations = 0;   // iterations in which its summed lateness was the largest
  // mean_late_us in its parts, against the earliest launcher of each
  // collective (they add up to it): its iteration started later, it took
  // longer from the iteration's start to the bucket's ready mark (forward,
  // backward's compute, anything that stalled it: an injected sleep), and
  // longer from ready to launch (waiting for buckets before it, the
  // launching call). Without ready marks the middle part runs to the launch.
  double mean_start_skew_us = 0, mean_compute_us = 0, mean_ready_to_launch_us = 0;
};
struct NodeLateness {
  int node = 0;
  double last_share = 0, mean_late_us = 0;
};
struct Stragglers {
  int collectives = 0;  // collectives seen on every rank
  int iterations = 0;   // iterations they belong to
  std::vector<RankLateness> ranks;
  std::vector<NodeLateness> nodes;
  // The rank that stands out: the latest in at least 2/3 of the iterations
  // (two at least), launched last in at least half the collectives, a mean
  // lateness of at least 1 ms and 5% of the median iteration, and at least
  // twice any other rank's.
  std::optional<int> worst;
  // One line, e.g. "straggler: rank 1 (node 0) launched 100% of ...", with
  // the named rank's lateness by cause.
  std::string verdict;
};
Stragglers stragglers(const std::vector<RankTimeline>& ranks);

// Medians over every rank-iteration, and the time-weighted overlap.
struct TraceSummary {
  int rank_iterations = 0;
  double wall_p50 = 0, compute_p50 = 0, comm_p50 = 0, exposed_p50 = 0, idle_p50 = 0;  // µs
  double comm_waiting_p50 = 0, comm_moving_p50 = 0;                                   // µs
  double idle_delay_p50 = 0, idle_in_backward_p50 = 0, idle_in_comm_wait_p50 = 0, idle_between_p50 = 0;
  double overlap = 0;  // Σ overlapped / Σ comm over all rank-iterations
};
TraceSummary summarize(const std::vector<IterationBreakdown>& b);

}  // namespace dtbench::trace
