#include "project/sharded_time.h"

#include <algorithm>

#include "project/schedule.h"

namespace dtbench::project {
namespace {

// One channel: a collective starts when issued and when the one before it
// is done.
struct Channel {
  double free_at = 0, busy = 0;
  int issued = 0;
  double run(double issue_s, double seconds) {
    free_at = std::max(free_at, issue_s) + seconds;
    busy += seconds;
    ++issued;
    return free_at;
  }
};

double step_seconds(const ComputeProfile& p, int world) { return p.optimizer_s / std::max(1, world); }

}  // namespace

StrategyTime zero_time(Strategy stage, const ComputeProfile& p, const std::vector<Bucket>& buckets,
                       const std::function<double(double)>& gather, const std::function<double(double)>& reduce,
                       int world, bool overlap) {
  Channel ch;
  double backward_done = p.backward_s;
  if (stage == Strategy::kZero2) {
    ScheduleOptions so;
    so.backward_s = p.backward_s;
    so.overlap = overlap;
    const auto s = run_schedule(buckets, reduce, so);
    backward_done = std::max(s.backward_end_s, s.last_done_s);
    ch.busy += s.comm_s;
    ch.issued += static_cast<int>(buckets.size());
  } else {
    for (const auto& b : buckets) backward_done = ch.run(p.backward_s, reduce(b.bytes));
  }
  double t = backward_done + step_seconds(p, world);
  ch.free_at = t;
  for (const auto& b : buckets) t = ch.run(t, gather(b.bytes));
  StrategyTime out;
  out.comm_s = ch.busy;
  out.collectives = ch.issued;
  out.iteration_s = p.forward_s + t + p.fixed_s;
  out.exposed_s = std::max(0.0, out.iteration_s - (p.forward_s + p.backward_s + step_seconds(p, world) + p.fixed_s));
  return out;
}

StrategyTime fsdp_time(const ComputeProfile& p, const std::vector<UnitWork>& units,
                       const std::function<double(double)>& gather_cost, const std::function<double(double)>& reduce_cost,
                       int world, bool reshard, double gather_bytes, double reduce_bytes) {
  Channel ch;
  const std::size_t n = units.size();
  auto fwd = [&](std::size_t u) { return p.forward_s * units[u].compute_share; };
  auto bwd = [&](std::size_t u) { return p.backward_s * units[u].compute_share; };
  auto gather = [&](double issue, std::size_t u) {
    return ch.run(issue, gather_cost(units[u].param_elements * gather_bytes));
  };
  auto reduce = [&](double issue, std::size_t u) {
    return ch.run(issue, reduce_cost(units[u].param_elements * reduce_bytes));
  };
  std::vector<double> gathered(n, 0);
  // Forward: the root first, then each unit's gather issued when the one
  // before it starts computing.
  const double root_ready = n > 0 ? gather(0, 0) : 0;
  double t = 0;
  if (n > 1) gathered[1] = gather(0, 1);
  for (std::size_t u = 1; u < n; ++u) {
    const double start = std::max({t, gathered[u], u == 1 ? root_ready : 0.0});
    if (u + 1 < n) gathered[u + 1] = gather(start, u + 1);
    t = start + fwd(u);
  }
  if (n > 0) t = std::max(t, root_ready) + fwd(0);  // the root's own compute: the head
  // Backward: the head first, then the units in reverse.
  if (n > 0) t += bwd(0);
  if (reshard && n > 1) gathered[n - 1] = gather(t, n - 1);
  for (std::size_t u = n; u-- > 1;) {
    const double start = reshard ? std::max(t, gathered[u]) : t;
    if (reshard && u > 1) gathered[u - 1] = gather(start, u - 1);
    t = start + bwd(u);
    reduce(t, u);
  }
  if (n > 0) reduce(t, 0);
  const double done = std::max(t, ch.free_at);
  StrategyTime out;
  out.comm_s = ch.busy;
  out.collectives = ch.issued;
  out.iteration_s = done + step_seconds(p, world) + p.fixed_s;
  out.exposed_s = std::max(0.0, done - (p.forward_s + p.backward_s));
  return out;
}

}  // namespace dtbench::project
