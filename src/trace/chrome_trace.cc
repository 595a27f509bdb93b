#include "trace/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "trace/observer.h"

namespace dtbench::trace {
namespace {

using Json = nlohmann::ordered_json;
constexpr int kTrainingTid = 1;
constexpr int kCommTid = 2;
// Horovod's stage slices, on tracks of their own from this id: a slice goes
// to the first track free at its start, so that slices on one track never
// overlap (Perfetto draws "X" slices of one thread as a stack: a partial
// overlap is drawn wrong).
constexpr int kStageTid = 3;
// A launching call that held the model's thread this long or longer is drawn.
constexpr double kInCallDrawnUs = 50;

std::string bucket_name(const Event& e) {
  return fmt::format("bucket {} ({:.2f} MiB {})", e.bucket, e.bytes / 1048576.0,
                     wire_dtype_name(static_cast<WireDType>(e.dtype)));
}

Json meta_event(const char* name, int pid, int tid, const std::string& value) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", value}}}};
}

}  // namespace

ClockEstimate interpolate(const ClockEstimate& before, const ClockEstimate& after) {
  ClockEstimate c = after;
  c.bound_us = std::max(before.bound_us, after.bound_us);
  const double span = after.at_us - before.at_us;
  c.drift_ppm = span >= 1000 ? (after.offset_us - before.offset_us) / span * 1e6 : 0;
  c.span_us = span >= 1000 ? span : 0;
  return c;
}

Json chrome_trace(const std::vector<RankTimeline>& ranks, const TraceMeta& meta) {
  double t0 = std::numeric_limits<double>::infinity();
  for (const auto& r : ranks)
    for (const auto& e : r.events) t0 = std::min(t0, e.begin_us);
  if (!std::isfinite(t0)) t0 = 0;
  Json events = Json::array();
  for (const auto& r : ranks) {
    // Rank R is process R + 1: Perfetto reads pid 0 as the kernel's idle
    // task (the process name says the rank).
    const int pid = r.rank + 1;
    const std::string host =
        r.node >= 0 && r.node < static_cast<int>(meta.node_hosts.size()) ? meta.node_hosts[r.node] : "?";
    events.push_back(meta_event("process_name", pid, 0, fmt::format("rank {} (node {}, {})", r.rank, r.node, host)));
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
                      {"args", {{"sort_index", r.rank}}}});
    events.push_back(meta_event("thread_name", pid, kTrainingTid, "training thread"));
    events.push_back(meta_event("thread_name", pid, kCommTid, "communication"));
    std::map<std::size_t, int> stage_track;  // event index -> track
    {
      std::vector<std::size_t> stages;
      for (std::size_t i = 0; i < r.events.size(); ++i)
        if (r.events[i].kind == EventKind::kStage) stages.push_back(i);
      std::stable_sort(stages.begin(), stages.end(),
                       [&](std::size_t a, std::size_t b) { return r.events[a].begin_us < r.events[b].begin_us; });
      std::vector<double> track_end;
      for (const auto i : stages) {
        const auto& e = r.events[i];
        auto free = std::find_if(track_end.begin(), track_end.end(), [&](double end) { return end <= e.begin_us; });
        if (free == track_end.end()) free = track_end.insert(track_end.end(), e.begin_us);
        *free = std::max(e.begin_us, e.end_us);
        stage_track[i] = static_cast<int>(free - track_end.begin());
      }
      for (std::size_t k = 0; k < track_end.size(); ++k)
        events.push_back(meta_event("thread_name", pid, kStageTid + static_cast<int>(k),
                                    k == 0 ? std::string("horovod stages")
                                           : fmt::format("horovod stages ({})", k + 1)));
    }
    // Bytes in flight: +bytes at each launch, -bytes at each completion.
    std::vector<std::pair<double, double>> flight;
    for (std::size_t index = 0; index < r.events.size(); ++index) {
      const auto& e = r.events[index];
      const double ts = e.begin_us - t0;
      switch (e.kind) {
        case EventKind::kPhase:
          events.push_back({{"name", phase_name(static_cast<Phase>(e.sub))}, {"cat", "phase"}, {"ph", "X"},
                            {"pid", pid}, {"tid", kTrainingTid}, {"ts", ts}, {"dur", e.duration_us()},
                            {"args", {{"iteration", e.iteration}}}});
          break;
        case EventKind::kIteration:
          events.push_back({{"name", fmt::format("iteration {}", e.iteration)}, {"cat", "iteration"},
                            {"ph", "X"}, {"pid", pid}, {"tid", 0}, {"ts", ts}, {"dur", e.duration_us()}});
          break;
        case EventKind::kBackwardCompute:
          break;  // analysis input; the backward phase shows it
        case EventKind::kInCall:
          // Drawn where the call held the thread (a blocking backend), not
          // for every launch that returned at once.
          if (e.duration_us() >= kInCallDrawnUs)
            events.push_back({{"name", e.sub == 0 ? std::string("waiting for communication")
                                                  : fmt::format("in {} call {}",
                                                                e.sub == static_cast<int>(EventKind::kAllGather)
                                                                    ? "all-gather" : "collective",
                                                                e.bucket)},
                              {"cat", "in call"}, {"ph", "X"}, {"pid", pid}, {"tid", kTrainingTid}, {"ts", ts},
                              {"dur", e.duration_us()}, {"args", {{"iteration", e.iteration}}}});
          break;
        case EventKind::kCast:
          events.push_back({{"name", fmt::format("cast bucket {}", e.bucket)}, {"cat", "compression"},
                            {"ph", "X"}, {"pid", pid}, {"tid", kTrainingTid}, {"ts", ts},
                            {"dur", e.duration_us()}, {"args", {{"iteration", e.iteration}}}});
          break;
        case EventKind::kStage:
          events.push_back({{"name", fmt::format("{} {}", stage_name(static_cast<Stage>(e.sub)), e.bucket)},
                            {"cat", "horovod"}, {"ph", "X"}, {"pid", pid}, {"tid", kStageTid + stage_track[index]},
                            {"ts", ts},
                            {"dur", e.duration_us()}, {"args", {{"iteration", e.iteration}, {"bucket", e.bucket}}}});
          break;
        case EventKind::kBucketReady:
          events.push_back({{"name", fmt::format("bucket {} ready", e.bucket)}, {"cat", "ready"}, {"ph", "i"},
                            {"s", "t"}, {"pid", pid}, {"tid", kTrainingTid}, {"ts", ts},
                            {"args", {{"iteration", e.iteration}}}});
          break;
        case EventKind::kAllGather: {
          const auto id = fmt::format("r{}i{}g{}", r.rank, e.iteration, e.bucket);
          const auto name = fmt::format("all-gather {}", e.bucket);
          events.push_back({{"name", name}, {"cat", "all-gather"}, {"ph", "b"}, {"id", id}, {"pid", pid},
                            {"tid", kCommTid}, {"ts", ts},
                            {"args", {{"iteration", e.iteration}, {"unit", e.bucket}, {"bytes", e.bytes}}}});
          events.push_back({{"name", name}, {"cat", "all-gather"}, {"ph", "e"}, {"id", id}, {"pid", pid},
                            {"tid", kCommTid}, {"ts", e.end_us - t0}});
          flight.push_back({ts, static_cast<double>(e.bytes)});
          flight.push_back({e.end_us - t0, -static_cast<double>(e.bytes)});
          break;
        }
        case EventKind::kCollective: {
          const auto id = fmt::format("r{}i{}b{}", r.rank, e.iteration, e.bucket);
          const Json args{{"iteration", e.iteration}, {"bucket", e.bucket}, {"bytes", e.bytes},
                          {"dtype", wire_dtype_name(static_cast<WireDType>(e.dtype))}};
          events.push_back({{"name", bucket_name(e)}, {"cat", "collective"}, {"ph", "b"}, {"id", id},
                            {"pid", pid}, {"tid", kCommTid}, {"ts", ts}, {"args", args}});
          events.push_back({{"name", bucket_name(e)}, {"cat", "collective"}, {"ph", "e"}, {"id", id},
                            {"pid", pid}, {"tid", kCommTid}, {"ts", e.end_us - t0}});
          flight.push_back({ts, static_cast<double>(e.bytes)});
          flight.push_back({e.end_us - t0, -static_cast<double>(e.bytes)});
          break;
        }
      }
    }
    std::stable_sort(flight.begin(), flight.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    double in_flight = 0;
    for (const auto& [ts, delta] : flight) {
      in_flight += delta;
      events.push_back({{"name", "bytes in flight"}, {"ph", "C"}, {"pid", pid}, {"ts", ts},
                        {"args", {{"bytes", std::max(0.0, in_flight)}}}});
    }
  }
  Json clocks = Json::array();
  double max_bound = 0, max_drift = 0;
  for (std::size_t r = 0; r < meta.clocks.size(); ++r) {
    const auto& c = meta.clocks[r];
    clocks.push_back({{"rank", r}, {"offset_us", c.offset_us}, {"bound_us", c.bound_us}, {"at_us", c.at_us},
                      {"drift_ppm", c.drift_ppm}, {"span_us", c.span_us}});
    max_bound = std::max(max_bound, c.bound_us);
    if (c.drift_beyond_error()) max_drift = std::max(max_drift, std::abs(c.drift_ppm));
  }
  Json other{{"generator", "dtbench"},
             {"run", meta.label},
             {"time_origin_us", t0},
             {"clock_sync",
              {{"method",
                "per rank on another host than rank 0's, the round trip to rank 0 with the smallest duration over "
                "the communicator, before the run and after it; offset = rank 0's time - the round trip's "
                "midpoint (at_us, this rank's time), |error| <= half the round trip; between the two (span_us apart) "
                "the offset drifts linearly (drift_ppm); ranks on rank 0's host share its steady clock: offset 0, bound 0"},
               {"max_bound_us", max_bound},
               {"max_drift_ppm", max_drift},  // beyond the estimates' errors only, as the report's
               {"ranks", clocks}}}};
  for (const auto& [k, v] : meta.other.items()) other[k] = v;
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", other}};
}

}  // namespace dtbench::trace
