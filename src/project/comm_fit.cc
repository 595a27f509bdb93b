#include "project/comm_fit.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "report/json_io.h"
#include "report/report_data.h"

namespace dtbench::project {

Level fit_level(std::vector<MeasuredPoint> points, int world, const std::string& source,
                const std::string& collective) {
  const std::string& c = collective;
  if (world < 2)
    throw UsageError(fmt::format("{}: an {} sweep of {} rank says nothing about a network (run `dtbench comm` "
                                 "with 2 or more ranks)", source, c, world));
  std::sort(points.begin(), points.end(), [](const MeasuredPoint& a, const MeasuredPoint& b) { return a.bytes < b.bytes; });
  points.erase(std::unique(points.begin(), points.end(),
                           [](const MeasuredPoint& a, const MeasuredPoint& b) { return a.bytes == b.bytes; }),
               points.end());
  if (points.size() < 2)
    throw UsageError(fmt::format("{}: the {} sweep has {} message size(s); the fit needs 2 or more "
                                 "(e.g. `dtbench comm -b 1K -e 64M`)", source, c, points.size()));
  for (const auto& p : points)
    if (!(p.bytes > 0) || !(p.seconds > 0))
      throw UsageError(fmt::format("{}: {} of {} B took {} s: sizes and times must be positive", source, c,
                                   p.bytes, p.seconds));
  const double passes = c == "allreduce" ? 2.0 : 1.0;  // a reduce-scatter then an all-gather
  const double steps = passes * (world - 1);
  const double bus_factor = passes * (world - 1) / world;
  Level level;
  level.source = source;
  level.latency_s = points.front().seconds / steps;
  for (const auto& p : points) {
    const double transfer = std::max(0.0, p.seconds - steps * level.latency_s);
    level.curve.emplace_back(p.bytes, transfer / (p.bytes * bus_factor));
  }
  return level;
}

LatencyBandwidth latency_bandwidth(const Level& level, int world, const std::string& collective) {
  const double passes = collective == "allreduce" ? 2.0 : 1.0;
  const double bus_factor = world > 0 ? passes * (world - 1) / world : 0;
  LatencyBandwidth lb;
  lb.steps = static_cast<int>(passes) * (world - 1);
  const double latency = lb.steps * level.latency_s;
  for (const auto& [bytes, spb] : level.curve) {
    if (spb * bytes * bus_factor <= latency) lb.latency_bound_bytes = bytes;
    lb.largest_bytes = bytes;
    lb.largest_bus_bw = spb > 0 ? 1.0 / spb : 0;
  }
  return lb;
}

std::vector<SweepFit> sweep_fits(const std::vector<report::CommRecord>& records, int world_size) {
  std::vector<SweepFit> out;
  for (const std::string c : {"allreduce", "allgather", "reduce_scatter"}) {
    std::vector<MeasuredPoint> in, oop;
    int world = world_size;
    for (const auto& r : records) {
      if (r.collective != c || r.cycle != 0 || r.group > 0) continue;
      if (!r.group_ranks.empty()) world = static_cast<int>(r.group_ranks.size());
      for (const auto* t : {&r.in_place, &r.out_of_place}) {
        if (!t->ran || t->rank_us.empty() || r.bytes == 0) continue;
        double sum = 0;
        for (double x : t->rank_us) sum += x;
        (t == &r.in_place ? in : oop).push_back({static_cast<double>(r.bytes), sum / t->rank_us.size() / 1e6});
      }
    }
    const bool use_in = !in.empty();
    auto points = use_in ? in : oop;
    // Sizes that round to the same element count repeat; fit_level keeps one.
    std::sort(points.begin(), points.end(), [](const MeasuredPoint& a, const MeasuredPoint& b) { return a.bytes < b.bytes; });
    points.erase(std::unique(points.begin(), points.end(),
                             [](const MeasuredPoint& a, const MeasuredPoint& b) { return a.bytes == b.bytes; }),
                 points.end());
    if (points.size() < 2 || world < 2) continue;
    SweepFit f;
    f.collective = c;
    f.placement = use_in ? "in place" : "out of place";
    f.world = world;
    Level level;
    try {
      level = fit_level(points, world, "this sweep", c);
    } catch (const UsageError&) {
      continue;  // a footer line left out, never a failed run
    }
    f.latency_s = level.latency_s;
    f.lb = latency_bandwidth(level, world, c);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace dtbench::project

namespace dtbench::project {

MeasuredLevel level_from_comm_report(const std::string& path, const std::string& flag) {
  const auto src = report::load_report_source(path);
  if (src.kind != "comm")
    throw UsageError(fmt::format("{} {}: a `dtbench comm` report is needed here, this is a {} report", flag, path,
                                 src.kind));
  MeasuredLevel m;
  std::vector<MeasuredPoint> out_of_place, in_place;
  std::vector<std::pair<double, double>> util_out, util_in;
  for (const auto& r : src.comm) {
    if (r.collective != "allreduce") continue;
    m.world_size = r.world_size;
    m.backend = r.backend;
    const bool in = r.placement == "in_place";
    (in ? in_place : out_of_place).push_back({static_cast<double>(r.bytes), r.mean_us / 1e6});
    if (r.cpu_util >= 0) (in ? util_in : util_out).emplace_back(static_cast<double>(r.bytes), r.cpu_util);
  }
  // The sharded strategies' collectives, where swept: the in-place rows
  // where there are any (FSDP2 and dtbench all-gather into the flat buffer),
  // else the out-of-place ones (reduce_scatter has no in-place form: its
  // output is a separate shard).
  const auto shard_level = [&](const char* collective) -> std::optional<Level> {
    std::vector<MeasuredPoint> out, in;
    int world = 0;
    for (const auto& r : src.comm) {
      if (r.collective != collective) continue;
      world = r.world_size;
      (r.placement == "in_place" ? in : out).push_back({static_cast<double>(r.bytes), r.mean_us / 1e6});
    }
    if (in.empty() && out.empty()) return std::nullopt;
    return fit_level(in.empty() ? out : in, world,
                     fmt::format("{} ({} {}, {} rank(s))", path, src.comm.front().backend, collective, world),
                     collective);
  };
  m.all_gather = shard_level("allgather");
  m.reduce_scatter = shard_level("reduce_scatter");
  if (out_of_place.empty() && in_place.empty())
    throw UsageError(fmt::format("{} {}: the report has no allreduce rows (run `dtbench comm --collective allreduce`)",
                                 flag, path));
  m.nodes = 1;
  if (src.env.is_object() && src.env.contains("world") && src.env.at("world").is_object())
    m.nodes = report::json_value_or<int>(src.env.at("world"), "num_nodes", 1, path);
  m.level = fit_level(in_place.empty() ? out_of_place : in_place, m.world_size,
                      fmt::format("{} ({} allreduce, {} rank(s) on {} node(s))", path, m.backend, m.world_size, m.nodes));
  auto& util = in_place.empty() ? util_out : util_in;
  std::sort(util.begin(), util.end());
  m.level.cpu_util = util;
  return m;
}

}  // namespace dtbench::project
