#include "trace/analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "stats/stats.h"
#include "trace/observer.h"

namespace dtbench::trace {
namespace {

bool is_phase(const Event& e, Phase p) {
  return e.kind == EventKind::kPhase && e.sub == static_cast<int>(p);
}

struct IterationSets {
  Interval window;
  std::vector<Interval> compute, comm, in_call;
  std::vector<Interval> waiting, moving;  // collectives' parts before / after the last launch
  std::vector<Interval> delay, backward, comm_wait;  // phase spans idle time is named by
};

bool is_launched_comm(const Event& e) {
  return e.kind == EventKind::kCollective || e.kind == EventKind::kAllGather;
}

// The key of `e`, a collective or all-gather, counting its launches in
// event order in `seen` (one map per rank and pass).
using LaunchCounts = std::map<std::tuple<int, int, int>, int>;
LaunchKey key_of(const Event& e, LaunchCounts& seen) {
  const int n = seen[{static_cast<int>(e.kind), e.iteration, e.bucket}]++;
  return {static_cast<int>(e.kind), e.iteration, e.bucket, n};
}

// Compute and communication intervals of each iteration of one rank;
// collectives split at `last` (every rank's last launch).
std::map<int, IterationSets> iteration_sets(const RankTimeline& t, const LastLaunches& last = {}) {
  std::map<int, IterationSets> out;
  std::map<int, bool> has_backward_compute;
  for (const auto& e : t.events) {
    if (e.kind == EventKind::kIteration) out[e.iteration].window = {e.begin_us, e.end_us};
    if (e.kind == EventKind::kBackwardCompute) has_backward_compute[e.iteration] = true;
  }
  LaunchCounts seen;
  for (const auto& e : t.events) {
    const std::optional<LaunchKey> key = is_launched_comm(e) ? std::optional<LaunchKey>(key_of(e, seen)) : std::nullopt;
    auto it = out.find(e.iteration);
    if (it == out.end()) continue;
    auto& s = it->second;
    const Interval iv{std::max(e.begin_us, s.window.begin), std::min(e.end_us, s.window.end)};
    if (is_phase(e, Phase::kForward) || is_phase(e, Phase::kOptimizer) || e.kind == EventKind::kCast ||
        e.kind == EventKind::kBackwardCompute ||
        (is_phase(e, Phase::kBackward) && !has_backward_compute[e.iteration]))
      s.compute.push_back(iv);
    else if (is_launched_comm(e) || is_phase(e, Phase::kBroadcast) ||
             (e.kind == EventKind::kStage && e.sub != static_cast<int>(Stage::kNegotiate))) {
      s.comm.push_back(iv);
      const auto l = key ? last.find(*key) : last.end();
      if (l == last.end()) {
        s.moving.push_back(iv);
      } else {
        s.waiting.push_back({iv.begin, std::min(iv.end, l->second)});
        s.moving.push_back({std::max(iv.begin, l->second), iv.end});
      }
    }
    else if (e.kind == EventKind::kInCall)
      s.in_call.push_back(iv);
    if (is_phase(e, Phase::kDelay)) s.delay.push_back(iv);
    if (is_phase(e, Phase::kBackward)) s.backward.push_back(iv);
    if (is_phase(e, Phase::kCommWait)) s.comm_wait.push_back(iv);
  }
  // The model's thread inside a launching call (a blocking backend's whole
  // collective) computed nothing then, whatever phase span holds it.
  for (auto& [_, s] : out) {
    s.compute = subtract(merge(std::move(s.compute)), merge(std::move(s.in_call)));
    s.comm = merge(std::move(s.comm));
  }
  return out;
}

double median(std::vector<double> v) { return v.empty() ? 0 : stats::percentile(v, 50); }

}  // namespace

LastLaunches last_launches(const std::vector<RankTimeline>& ranks) {
  std::map<LaunchKey, std::pair<std::size_t, double>> all;  // ranks that launched it, the latest launch
  for (const auto& t : ranks) {
    std::map<LaunchKey, double> mine;  // this rank's launch of each
    LaunchCounts counts;
    for (const auto& e : t.events)
      if (is_launched_comm(e)) mine[key_of(e, counts)] = e.begin_us;
    for (const auto& [k, at] : mine) {
      auto& s = all[k];
      s.second = s.first == 0 ? at : std::max(s.second, at);
      ++s.first;
    }
  }
  LastLaunches out;
  for (const auto& [k, s] : all)
    if (s.first == ranks.size()) out[k] = s.second;
  return out;
}

std::vector<Interval> merge(std::vector<Interval> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](const Interval& i) { return !(i.end > i.begin); }),
          v.end());
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (!out.empty() && i.begin <= out.back().end)
      out.back().end = std::max(out.back().end, i.end);
    else
      out.push_back(i);
  }
  return out;
}

std::vector<Interval> subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t j = 0;
  for (auto i : a) {
    while (j < b.size() && b[j].end <= i.begin) ++j;
    for (std::size_t k = j; k < b.size() && b[k].begin < i.end; ++k) {
      if (b[k].begin > i.begin) out.push_back({i.begin, b[k].begin});
      i.begin = std::max(i.begin, b[k].end);
    }
    if (i.end > i.begin) out.push_back(i);
  }
  return out;
}

double length(const std::vector<Interval>& merged) {
  double s = 0;
  for (const auto& i : merged) s += i.end - i.begin;
  return s;
}

double intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double s = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].begin, b[j].begin), hi = std::min(a[i].end, b[j].end);
    if (hi > lo) s += hi - lo;
    if (a[i].end < b[j].end)
      ++i;
    else
      ++j;
  }
  return s;
}

std::vector<IterationBreakdown> breakdown(const RankTimeline& t, const LastLaunches& last) {
  std::vector<IterationBreakdown> out;
  for (const auto& [it, s] : iteration_sets(t, last)) {
    IterationBreakdown b;
    b.rank = t.rank;
    b.iteration = it;
    b.wall = std::max(0.0, s.window.end - s.window.begin);
    b.compute = length(s.compute);
    b.comm = length(s.comm);
    b.overlapped = intersection(s.comm, s.compute);
    b.exposed = b.comm - b.overlapped;
    b.idle = std::max(0.0, b.wall - (b.compute + b.comm - b.overlapped));
    b.comm_waiting = length(subtract(merge(s.waiting), merge(s.moving)));
    b.comm_moving = b.comm - b.comm_waiting;
    // Idle time named by the span it lies in: the injected delay, backward
    // (not computing: hooks, bucket copies, launching calls), the wait
    // after backward with nothing in flight, else between phases.
    std::vector<Interval> busy = s.compute;
    busy.insert(busy.end(), s.comm.begin(), s.comm.end());
    auto idle = subtract(merge({s.window}), merge(std::move(busy)));
    const std::pair<const std::vector<Interval>*, double*> named[] = {
        {&s.delay, &b.idle_delay}, {&s.backward, &b.idle_in_backward}, {&s.comm_wait, &b.idle_in_comm_wait}};
    for (const auto& [spans, part] : named) {
      const auto m = merge(*spans);
      *part = intersection(idle, m);
      idle = subtract(idle, m);
    }
    b.idle_between = length(idle);
    out.push_back(b);
  }
  return out;
}

std::vector<BucketStats> bucket_stats(const std::vector<RankTimeline>& ranks) {
  struct Acc {
    std::int64_t bytes = 0;
    std::vector<double> delay, duration, ready_after, waiting, moving;
    double hidden = 0, total = 0;
  };
  std::map<int, Acc> acc;
  const auto last = last_launches(ranks);
  for (const auto& t : ranks) {
    const auto sets = iteration_sets(t);
    std::map<std::pair<int, int>, double> ready;
    std::map<int, double> backward_begin;
    for (const auto& e : t.events) {
      if (e.kind == EventKind::kBucketReady) ready[{e.iteration, e.bucket}] = e.begin_us;
      if (e.kind == EventKind::kBackwardCompute) backward_begin[e.iteration] = e.begin_us;
    }
    LaunchCounts seen;
    for (const auto& e : t.events) {
      if (!is_launched_comm(e)) continue;
      const auto key = key_of(e, seen);  // counted for all-gathers too, as last_launches does
      if (e.kind != EventKind::kCollective) continue;
      auto& a = acc[e.bucket];
      a.bytes = e.bytes;
      a.duration.push_back(e.duration_us());
      const auto l = last.find(key);
      if (l != last.end()) {
        a.waiting.push_back(std::clamp(l->second - e.begin_us, 0.0, std::max(0.0, e.duration_us())));
        a.moving.push_back(std::max(0.0, e.end_us - std::max(e.begin_us, l->second)));
      }
      const auto r = ready.find({e.iteration, e.bucket});
      if (r != ready.end()) {
        a.delay.push_back(std::max(0.0, e.begin_us - r->second));
        const auto b = backward_begin.find(e.iteration);
        if (b != backward_begin.end()) a.ready_after.push_back(std::max(0.0, r->second - b->second));
      }
      const auto s = sets.find(e.iteration);
      if (s != sets.end() && e.duration_us() > 0) {
        a.hidden += intersection({{e.begin_us, e.end_us}}, s->second.compute);
        a.total += e.duration_us();
      }
    }
  }
  std::vector<BucketStats> out;
  for (auto& [b, a] : acc) {
    BucketStats s;
    s.bucket = b;
    s.bytes = a.bytes;
    s.samples = static_cast<int>(a.duration.size());
    s.ready_to_launch_p50 = median(a.delay);
    s.ready_after_backward_p50 = a.ready_after.empty() ? -1 : median(a.ready_after);
    s.duration_p50 = median(a.duration);
    s.waiting_p50 = median(a.waiting);
    s.moving_p50 = a.moving.empty() ? s.duration_p50 : median(a.moving);
    s.hidden = a.total > 0 ? a.hidden / a.total : 0;
    out.push_back(s);
  }
  return out;
}

double backward_compute_p50(const std::vector<RankTimeline>& ranks) {
  std::vector<double> v;
  for (const auto& t : ranks)
    for (const auto& e : t.events)
      if (e.kind == EventKind::kBackwardCompute) v.push_back(e.duration_us());
  return v.empty() ? -1 : median(v);
}

Stragglers stragglers(const std::vector<RankTimeline>& ranks) {
  Stragglers out;
  // Launch time of every (iteration, bucket) per rank index; each rank's
  // iteration starts and ready marks, to split lateness by cause.
  std::map<std::pair<int, int>, std::vector<double>> launches;
  std::vector<std::map<int, double>> starts(ranks.size());
  std::vector<std::map<std::pair<int, int>, double>> readies(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r)
    for (const auto& e : ranks[r].events) {
      if (e.kind == EventKind::kCollective) {
        auto& v = launches[{e.iteration, e.bucket}];
        v.resize(ranks.size(), -1);
        v[r] = e.begin_us;
      }
      if (e.kind == EventKind::kIteration) starts[r][e.iteration] = e.begin_us;
      if (e.kind == EventKind::kBucketReady) readies[r][{e.iteration, e.bucket}] = e.begin_us;
    }
  std::vector<int> last(ranks.size(), 0);
  std::vector<double> late(ranks.size(), 0);
  // Lateness by cause, summed: start skew, start -> ready, ready -> launch.
  std::vector<double> skew(ranks.size(), 0), compute(ranks.size(), 0), to_launch(ranks.size(), 0);
  // Per iteration, each rank's summed lateness: the collectives of one
  // iteration are not independent samples, the iterations are.
  std::map<int, std::vector<double>> late_in_iteration;
  for (const auto& [key, v] : launches) {
    if (v.size() != ranks.size() || std::any_of(v.begin(), v.end(), [](double x) { return x < 0; }))
      continue;
    ++out.collectives;
    const double first = *std::min_element(v.begin(), v.end());
    const auto earliest = static_cast<std::size_t>(std::min_element(v.begin(), v.end()) - v.begin());
    const auto latest = std::max_element(v.begin(), v.end()) - v.begin();
    ++last[latest];
    auto& it = late_in_iteration[key.first];
    it.resize(ranks.size(), 0);
    // A rank's start and ready mark (its launch where it has none).
    auto start_of = [&](std::size_t r) {
      const auto f = starts[r].find(key.first);
      return f != starts[r].end() ? f->second : v[r];
    };
    auto ready_of = [&](std::size_t r) {
      const auto f = readies[r].find(key);
      return f != readies[r].end() ? std::min(f->second, v[r]) : v[r];
    };
    const double start_e = start_of(earliest), ready_e = ready_of(earliest);
    for (std::size_t r = 0; r < v.size(); ++r) {
      late[r] += v[r] - first;
      it[r] += v[r] - first;
      const double start_r = start_of(r), ready_r = ready_of(r);
      skew[r] += start_r - start_e;
      compute[r] += (ready_r - start_r) - (ready_e - start_e);
      to_launch[r] += (v[r] - ready_r) - (first - ready_e);
    }
  }
  out.iterations = static_cast<int>(late_in_iteration.size());
  std::vector<int> latest_iterations(ranks.size(), 0);
  for (const auto& [_, v] : late_in_iteration)
    ++latest_iterations[std::max_element(v.begin(), v.end()) - v.begin()];
  std::map<int, std::vector<std::size_t>> by_node;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    RankLateness l;
    l.rank = ranks[r].rank;
    l.node = ranks[r].node;
    l.collectives = out.collectives;
    l.latest_iterations = latest_iterations[r];
    if (out.collectives > 0) {
      l.last_share = static_cast<double>(last[r]) / out.collectives;
      l.mean_late_us = late[r] / out.collectives;
      l.mean_start_skew_us = skew[r] / out.collectives;
      l.mean_compute_us = compute[r] / out.collectives;
      l.mean_ready_to_launch_us = to_launch[r] / out.collectives;
    }
    out.ranks.push_back(l);
    by_node[l.node].push_back(r);
  }
  for (const auto& [node, members] : by_node) {
    NodeLateness n;
    n.node = node;
    for (std::size_t r : members) {
      n.last_share += out.ranks[r].last_share;
      n.mean_late_us += out.ranks[r].mean_late_us / members.size();
    }
    out.nodes.push_back(n);
  }
  if (ranks.size() < 2 || out.collectives == 0) return out;
  auto order = out.ranks;
  std::sort(order.begin(), order.end(),
            [](const RankLateness& a, const RankLateness& b) { return a.mean_late_us > b.mean_late_us; });
  const auto& w = order[0];
  std::vector<double> walls;
  for (const auto& t : ranks)
    for (const auto& e : t.events)
      if (e.kind == EventKind::kIteration) walls.push_back(e.duration_us());
  const double wall = median(walls);
  if (out.iterations >= 2 && 3 * w.latest_iterations >= 2 * out.iterations && w.last_share >= 0.5 &&
      w.mean_late_us >= std::max(1000.0, 0.05 * wall) && w.mean_late_us >= 2 * order[1].mean_late_us) {
    out.worst = w.rank;
    // The cause: the largest of the three parts.
    const std::pair<double, const char*> parts[] = {
        {w.mean_start_skew_us, "it started its iterations late"},
        {w.mean_compute_us, "it reached each bucket's ready mark later into its iteration"},
        {w.mean_ready_to_launch_us, "it launched later after each bucket was ready"}};
    const auto* cause = std::max_element(std::begin(parts), std::end(parts),
                                         [](const auto& a, const auto& b) { return a.first < b.first; });
    // Milliseconds to one decimal, without a "-0.0".
    auto ms = [](double us) { return std::abs(us) < 50 ? 0.0 : us / 1000; };
    out.verdict = fmt::format(
        "straggler: rank {} (node {}) launched {:.0f}% of {} collectives last (latest in {} of {} "
        "iterations), {:.1f} ms after the earliest rank on average (next: rank {}, {:.1f} ms); mostly "
        "because {} ({:.1f} ms; start {:.1f}, to ready {:.1f}, ready to launch {:.1f})",
        w.rank, w.node, 100 * w.last_share, out.collectives, w.latest_iterations, out.iterations,
        w.mean_late_us / 1000, order[1].rank, order[1].mean_late_us / 1000, cause->second, ms(cause->first),
        ms(w.mean_start_skew_us), ms(w.mean_compute_us), ms(w.mean_ready_to_launch_us));
  } else {
    out.verdict = fmt::format(
        "no straggler: the latest rank on average (rank {}) launched collectives {:.2f} ms after the "
        "earliest ({:.1f}% of an iteration)",
        w.rank, w.mean_late_us / 1000, wall > 0 ? 100 * w.mean_late_us / wall : 0.0);
  }
  return out;
}

TraceSummary summarize(const std::vector<IterationBreakdown>& b) {
  TraceSummary s;
  s.rank_iterations = static_cast<int>(b.size());
  std::vector<double> wall, compute, comm, exposed, idle, waiting, moving, delay, in_backward, in_wait, between;
  double overlapped = 0, total_comm = 0;
  for (const auto& x : b) {
    waiting.push_back(x.comm_waiting);
    moving.push_back(x.comm_moving);
    delay.push_back(x.idle_delay);
    in_backward.push_back(x.idle_in_backward);
    in_wait.push_back(x.idle_in_comm_wait);
    between.push_back(x.idle_between);
    wall.push_back(x.wall);
    compute.push_back(x.compute);
    comm.push_back(x.comm);
    exposed.push_back(x.exposed);
    idle.push_back(x.idle);
    overlapped += x.overlapped;
    total_comm += x.comm;
  }
  s.wall_p50 = median(wall);
  s.compute_p50 = median(compute);
  s.comm_p50 = median(comm);
  s.exposed_p50 = median(exposed);
  s.idle_p50 = median(idle);
  s.comm_waiting_p50 = median(waiting);
  s.comm_moving_p50 = median(moving);
  s.idle_delay_p50 = median(delay);
  s.idle_in_backward_p50 = median(in_backward);
  s.idle_in_comm_wait_p50 = median(in_wait);
  s.idle_between_p50 = median(between);
  s.overlap = total_comm > 0 ? overlapped / total_comm : 0;
  return s;
}

}  // namespace dtbench::trace
