#include "project/schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dtbench::project {

std::vector<Bucket> make_buckets(std::vector<GradItem> items, const BucketOptions& opts) {
  std::stable_sort(items.begin(), items.end(),
                   [](const GradItem& a, const GradItem& b) { return a.ready_s < b.ready_s; });
  std::vector<Bucket> out;
  Bucket open;
  bool has = false;
  for (const auto& it : items) {
    if (it.bytes <= 0) continue;
    open.bytes += it.bytes;
    open.ready_s = std::max(open.ready_s, it.ready_s);
    has = true;
    const double cap = out.empty() ? opts.first_cap_bytes : opts.cap_bytes;
    if (open.bytes >= cap) {
      out.push_back(open);
      open = Bucket{};
      has = false;
    }
  }
  if (has) out.push_back(open);
  return out;
}

std::vector<GradItem> split_items(const std::vector<GradItem>& items, double piece_bytes) {
  std::vector<GradItem> out;
  double previous = 0;
  for (const auto& it : items) {
    const int pieces = std::max(1, static_cast<int>(std::ceil(it.bytes / piece_bytes)));
    for (int p = 1; p <= pieces; ++p)
      out.push_back({it.bytes / pieces, previous + (it.ready_s - previous) * p / pieces});
    previous = std::max(previous, it.ready_s);
  }
  return out;
}

namespace {

// The share of its demand every thread gets when the node's threads ask for
// `demand` cores (processor sharing; 1 without contention).
double share(const ScheduleOptions& opts, double demand) {
  return opts.node_cores > 0 && demand > opts.node_cores ? opts.node_cores / demand : 1.0;
}

}  // namespace

double compute_speed(const ScheduleOptions& opts, double demand) {
  return share(opts, demand) / share(opts, opts.profiled_cores);
}

Schedule run_schedule(const std::vector<Bucket>& buckets, const std::function<double(double)>& cost,
                      const ScheduleOptions& opts) {
  // A fluid simulation between events (a bucket starts or ends, backward
  // reaches a bucket's ready point or its end). Without contention every
  // speed is 1 and it is the plain schedule: start = max(ready, channel free).
  constexpr double kEps = 1e-15;
  const bool contended = opts.node_cores > 0;
  const double B = std::max(0.0, opts.backward_s);
  Schedule s;
  double t = 0, progress = 0;  // wall seconds; backward's progress in uncontended seconds
  double backward_end = B > 0 ? -1 : 0;
  std::size_t next = 0;
  bool running = false;
  double left = 0, comm_demand = 0;  // the running collective's uncontended seconds to go, its cores
  // Where backward's progress must reach before bucket `b` may start.
  auto gate = [&](std::size_t b) { return opts.overlap ? buckets[b].ready_s : std::max(buckets[b].ready_s, B); };
  while (next < buckets.size() || running) {
    const bool computing = backward_end < 0;
    if (!running) {
      const double g = gate(next);
      if (!computing && g > B) t = std::max(t, backward_end + (g - B));  // ready after backward: wall time
      if (!computing || progress >= g - kEps) {
        const double seconds = cost(buckets[next].bytes);
        s.start_s.push_back(t);
        s.comm_s += seconds;
        left = seconds;
        comm_demand = contended && opts.comm_cores ? std::min(opts.node_cores, opts.comm_cores(buckets[next].bytes)) : 0;
        running = true;
        ++next;
      }
    }
    const double demand = (computing ? opts.compute_cores : 0) + (running ? comm_demand : 0);
    const double speed_compute = computing ? compute_speed(opts, demand) : 0;
    const double speed_comm = running ? share(opts, demand) / share(opts, comm_demand) : 0;
    double dt = std::numeric_limits<double>::infinity();
    if (computing) {
      const double target = !running && next < buckets.size() ? std::min(B, gate(next)) : B;
      dt = std::max(0.0, target - progress) / speed_compute;
    }
    if (running) dt = std::min(dt, left / speed_comm);
    t += dt;
    if (computing) {
      progress += speed_compute * dt;
      if (progress >= B - kEps * std::max(1.0, B)) {
        progress = B;
        backward_end = t;
      }
    }
    if (running) {
      left -= speed_comm * dt;
      if (left <= kEps * std::max(1.0, t)) {
        s.done_s.push_back(t);
        running = false;
      }
    }
  }
  if (backward_end < 0) backward_end = t + (B - progress) / compute_speed(opts, opts.compute_cores);
  s.backward_end_s = backward_end;
  s.last_done_s = buckets.empty() ? 0 : s.done_s.back();
  s.exposed_s = std::max(0.0, s.last_done_s - s.backward_end_s);
  return s;
}

}  // namespace dtbench::project
