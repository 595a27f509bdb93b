#include "project/horovod_time.h"

#include <algorithm>
#include <cmath>

namespace dtbench::project {

StrategyTime horovod_time(const ComputeProfile& p, std::vector<GradItem> items,
                          const std::function<double(double)>& allreduce, double negotiate_s,
                          const HorovodOptions& o) {
  std::stable_sort(items.begin(), items.end(), [](const GradItem& a, const GradItem& b) { return a.ready_s < b.ready_s; });
  const double cycle = std::max(o.cycle_s, 1e-9);
  StrategyTime out;
  double wake = 0, done = 0;  // the loop's next wake-up; when its last work ended (from backward's start)
  std::size_t next = 0;
  while (next < items.size()) {
    if (items[next].ready_s > wake) {  // nothing ready: sleep whole cycles until something is
      // Whole cycles, at least one (the 1e-9 keeps 0.005 / 0.001 from rounding up to 6).
      wake += cycle * std::max(1.0, std::ceil((items[next].ready_s - wake) / cycle - 1e-9));
      continue;
    }
    double seconds = negotiate_s, group = 0;
    for (; next < items.size() && items[next].ready_s <= wake; ++next) {
      if (group > 0 && group + items[next].bytes > o.threshold_bytes) {
        seconds += allreduce(group);
        ++out.collectives;
        group = 0;
      }
      group += items[next].bytes;
    }
    seconds += allreduce(group);
    ++out.collectives;
    out.comm_s += seconds;
    done = wake + seconds;
    wake = std::max(wake + cycle, done);
  }
  const double backward_done = std::max(p.backward_s, done);
  out.iteration_s = p.forward_s + backward_done + p.optimizer_s + p.fixed_s;
  out.exposed_s = backward_done - p.backward_s;
  return out;
}

}  // namespace dtbench::project
