#include "project/schedule.h"

#include <algorithm>
#include <cmath>

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

Schedule run_schedule(const std::vector<Bucket>& buckets, const std::function<double(double)>& cost,
                      const ScheduleOptions& opts) {
  Schedule s;
  double channel_free = 0;
  for (const auto& b : buckets) {
    const double ready = opts.overlap ? b.ready_s : std::max(b.ready_s, opts.backward_s);
    const double start = std::max(ready, channel_free);
    const double seconds = cost(b.bytes);
    s.start_s.push_back(start);
    s.done_s.push_back(start + seconds);
    s.comm_s += seconds;
    channel_free = start + seconds;
  }
  s.last_done_s = buckets.empty() ? 0 : channel_free;
  s.exposed_s = std::max(0.0, s.last_done_s - opts.backward_s);
  return s;
}

}  // namespace dtbench::project
