#include "bench/ddp/ddp_trace.h"

#include <cmath>

#include <fmt/format.h>

#include "comm/communicator.h"
#include "core/error.h"
#include "core/log.h"
#include "report/json_io.h"
#include "trace/analysis.h"
#include "trace/chrome_trace.h"
#include "trace/collect.h"

namespace dtbench::bench {
namespace {

using Json = nlohmann::ordered_json;

double ms(double us) { return us / 1000; }

Json idle_parts(const trace::TraceSummary& s) {
  return {{"delay", ms(s.idle_delay_p50)},
          {"in_backward", ms(s.idle_in_backward_p50)},
          {"in_comm_wait", ms(s.idle_in_comm_wait_p50)},
          {"between_phases", ms(s.idle_between_p50)}};
}

Json analysis_json(const std::vector<trace::RankTimeline>& ranks) {
  std::vector<trace::IterationBreakdown> all;
  Json per_rank = Json::array();
  const auto late = trace::stragglers(ranks);
  const auto last = trace::last_launches(ranks);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const auto b = trace::breakdown(ranks[r], last);
    all.insert(all.end(), b.begin(), b.end());
    const auto s = trace::summarize(b);
    Json j{{"rank", ranks[r].rank},
           {"node", ranks[r].node},
           {"wall_ms_p50", ms(s.wall_p50)},
           {"compute_ms_p50", ms(s.compute_p50)},
           {"comm_ms_p50", ms(s.comm_p50)},
           {"comm_waiting_ms_p50", ms(s.comm_waiting_p50)},
           {"comm_moving_ms_p50", ms(s.comm_moving_p50)},
           {"overlap", s.overlap},
           {"exposed_comm_ms_p50", ms(s.exposed_p50)},
           {"idle_ms_p50", ms(s.idle_p50)},
           {"idle_parts_ms_p50", idle_parts(s)}};
    if (r < late.ranks.size()) {
      j["launched_last_share"] = late.ranks[r].last_share;
      j["mean_lateness_ms"] = ms(late.ranks[r].mean_late_us);
      j["latest_iterations"] = late.ranks[r].latest_iterations;
      j["lateness_cause_ms"] = {{"start", ms(late.ranks[r].mean_start_skew_us)},
                                {"to_ready", ms(late.ranks[r].mean_compute_us)},
                                {"ready_to_launch", ms(late.ranks[r].mean_ready_to_launch_us)}};
    }
    per_rank.push_back(j);
  }
  const auto s = trace::summarize(all);
  Json buckets = Json::array();
  for (const auto& b : trace::bucket_stats(ranks))
    buckets.push_back({{"bucket", b.bucket},
                       {"bytes", b.bytes},
                       {"samples", b.samples},
                       {"ready_to_launch_ms_p50", ms(b.ready_to_launch_p50)},
                       {"ready_after_backward_ms_p50",
                        b.ready_after_backward_p50 < 0 ? Json(nullptr) : Json(ms(b.ready_after_backward_p50))},
                       {"duration_ms_p50", ms(b.duration_p50)},
                       {"waiting_ms_p50", ms(b.waiting_p50)},
                       {"moving_ms_p50", ms(b.moving_p50)},
                       {"hidden", b.hidden}});
  Json nodes = Json::array();
  for (const auto& n : late.nodes)
    nodes.push_back({{"node", n.node}, {"launched_last_share", n.last_share}, {"mean_lateness_ms", ms(n.mean_late_us)}});
  const double backward = trace::backward_compute_p50(ranks);
  Json j{{"rank_iterations", s.rank_iterations},
         {"wall_ms_p50", ms(s.wall_p50)},
         {"compute_ms_p50", ms(s.compute_p50)},
         {"comm_ms_p50", ms(s.comm_p50)},
         {"comm_waiting_ms_p50", ms(s.comm_waiting_p50)},
         {"comm_moving_ms_p50", ms(s.comm_moving_p50)},
         {"overlap", s.overlap},
         {"exposed_comm_ms_p50", ms(s.exposed_p50)},
         {"idle_ms_p50", ms(s.idle_p50)},
         {"idle_parts_ms_p50", idle_parts(s)},
         {"backward_compute_ms_p50", backward < 0 ? Json(nullptr) : Json(ms(backward))},
         {"collectives", late.collectives},
         {"straggler", late.worst ? Json(*late.worst) : Json(nullptr)},
         {"verdict", late.verdict},
         {"per_rank", per_rank},
         {"per_node", nodes},
         {"buckets", buckets}};
  return j;
}

}  // namespace

std::unique_ptr<trace::Timeline> make_timeline(const train::TrainOptions& opts) {
  if (opts.trace_path.empty()) return nullptr;
  return std::make_unique<trace::Timeline>(opts.warmup, std::min(opts.trace_iters, opts.iters));
}

std::unique_ptr<trace::TorchProfiler> make_torch_profiler(const train::TrainOptions& opts,
                                                          const launch::World& world,
                                                          const std::string& backend) {
  if (opts.torch_profiler_path.empty()) return nullptr;
  trace::TorchProfilerOptions o;
  o.path = trace::torch_profiler_rank_path(opts.torch_profiler_path, world.rank, world.world_size);
  o.first_iteration = opts.warmup;
  o.count = std::min(opts.trace_iters, opts.iters);
  o.cuda = opts.device == "cuda";
  o.backend = backend;
  o.rank = world.rank;
  o.world_size = world.world_size;
  return trace::make_torch_profiler(o);
}

trace::ClockEstimate clock_before_trace(comm::Communicator* comm) {
  return comm != nullptr && comm->size() > 1 ? trace::estimate_clock(*comm) : trace::ClockEstimate{};
}

Json finish_trace(const train::TrainOptions& opts, comm::Communicator* comm, const launch::World& world,
                  const launch::Topology& topology, const trace::Timeline& timeline,
                  const std::string& label, const trace::ClockEstimate& before) {
  const int node = world.rank < topology.ranks() ? topology.node_of_rank[world.rank] : 0;
  trace::Gathered g;
  if (comm != nullptr && comm->size() > 1) {
    // The offset after the run, drifting linearly from the one before it.
    auto clock = trace::interpolate(before, trace::estimate_clock(*comm));
    // A rank on rank 0's host reads the same steady clock: its offset is 0,
    // exactly (an estimate would add its own error).
    if (topology.ranks() > 0 && node == topology.node_of_rank[0]) clock = trace::ClockEstimate{};
    g = trace::gather_timelines(*comm, timeline.events(), node, clock);
  } else {
    g.ranks.push_back({world.rank, node, timeline.events()});
    g.clocks.push_back({});
  }
  const int incomplete = timeline.incomplete();
  if (world.rank != 0) return nullptr;
  Json summary = analysis_json(g.ranks);
  double bound = 0, drift = 0;
  for (const auto& c : g.clocks) {
    bound = std::max(bound, c.bound_us);
    if (c.drift_beyond_error()) drift = std::max(drift, std::abs(c.drift_ppm));
  }
  summary["clock_max_bound_ms"] = ms(bound);
  summary["clock_max_drift_ppm"] = drift;
  summary["iterations"] = {{"first", timeline.first_iteration()}, {"count", timeline.count()}};
  if (incomplete > 0) summary["incomplete_collectives_rank0"] = incomplete;
  trace::TraceMeta meta;
  meta.label = label;
  meta.node_hosts = topology.node_hosts;
  meta.clocks = g.clocks;
  meta.other["reducer"] = opts.reducer;
  meta.other["analysis"] = summary;
  const auto doc = trace::chrome_trace(g.ranks, meta);
  const std::string text = doc.dump();
  report::write_text_atomic(opts.trace_path, text);
  std::size_t events = 0;
  for (const auto& r : g.ranks) events += r.events.size();
  Json out{{"file", opts.trace_path}, {"bytes", text.size()}, {"events", events}};
  for (const auto& [k, v] : summary.items()) out[k] = v;
  return out;
}

}  // namespace dtbench::bench
