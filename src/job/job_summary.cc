#include "job/job_summary.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "stats/stats.h"

namespace dtbench::job {
namespace {

// The part of merged `v` inside [begin, end].
std::vector<Span> clip(const std::vector<Span>& v, double begin, double end) {
  std::vector<Span> out;
  for (const auto& s : v) {
    const double b = std::max(s.begin, begin), e = std::min(s.end, end);
    if (e > b) out.push_back({b, e});
  }
  return out;
}

std::string describe(const Collective& c) {
  const int64_t n = std::max(c.in_nelems, c.out_nelems);
  const std::string dtype = c.dtype.empty() ? "" : " " + c.dtype;
  return n >= 0 ? fmt::format("{} of {}{} elements", c.name, n, dtype) : c.name;
}

// Non-empty (why) where collectives of several process groups cannot be
// told apart: the trace names no group (Gloo's ops) while a rank has more
// than one.
std::string unknown_groups(const JobTrace& job) {
  for (const auto& r : job.ranks) {
    if (r.groups.size() < 2) continue;
    for (const auto& c : r.collectives)
      if (c.group.empty())
        return fmt::format("rank {}'s trace names no process group for its collectives and it has {} groups",
                           r.rank, r.groups.size());
  }
  return "";
}

// Each collective's last start over the ranks of its group (the k-th of
// the group in an iteration on every rank), where every member traced it.
// Empty, with `note` saying why, where the split cannot be made.
std::map<const Collective*, double> last_starts(const JobTrace& job, std::string& note) {
  std::map<const Collective*, double> last;
  if (job.ranks.size() < 2) {
    note = "one rank: nothing to wait for";
    return last;
  }
  if (const std::string why = unknown_groups(job); !why.empty()) {
    note = why;
    return last;
  }
  std::set<int> present;
  for (const auto& r : job.ranks) present.insert(r.rank);
  using Key = std::tuple<std::string, int, int>;  // group, step, index in the step
  std::map<Key, std::vector<const Collective*>> instances;
  std::map<std::string, std::set<int>> members;
  for (const auto& r : job.ranks) {
    std::map<std::pair<std::string, int>, int> index;
    for (const auto& c : r.collectives) {
      if (c.step < 0 || c.name == "send" || c.name == "recv") continue;
      const int k = index[{c.group, c.step}]++;  // counted whether it ran or not
      if (c.has_run()) instances[{c.group, c.step, k}].push_back(&c);
    }
    for (const auto& g : r.groups) members[g.name].insert(g.ranks.begin(), g.ranks.end());
  }
  int misaligned = 0;
  for (const auto& [key, runs] : instances) {
    const auto& group = std::get<0>(key);
    const auto it = members.find(group);
    const std::set<int>& want = it != members.end() && !it->second.empty() ? it->second : present;
    for (int m : want)
      if (!present.count(m)) {
        note = fmt::format("rank {} of group {} has no trace", m, group.empty() ? "?" : group);
        return {};
      }
    if (runs.size() != want.size()) continue;  // an iteration some member did not trace
    double latest_start = runs.front()->run.begin, earliest_end = runs.front()->run.end;
    for (const auto* c : runs) {
      latest_start = std::max(latest_start, c->run.begin);
      earliest_end = std::min(earliest_end, c->run.end);
    }
    if (latest_start > earliest_end) ++misaligned;
    for (const auto* c : runs) last[c] = latest_start;
  }
  if (misaligned > 0) {
    note = fmt::format("{} collective(s) ran on some rank wholly before another rank started them: the ranks' "
                       "clocks differ (hosts not synchronised)",
                       misaligned);
    return {};
  }
  return last;
}

}  // namespace

JobSummary summarize(const JobTrace& job) {
  JobSummary out;
  const auto last = last_starts(job, out.split_note);
  out.split = !last.empty();
  std::map<std::tuple<std::string, std::string, int64_t, std::string>, std::pair<std::vector<double>, std::vector<double>>>
      parts;  // class -> (waiting parts, moving parts)
  using Key = std::tuple<std::string, std::string, int64_t, std::string>;  // group, name, bytes, dtype
  std::map<Key, std::vector<double>> times;
  std::map<Key, CollectiveClass> classes;
  std::map<int, std::vector<std::pair<double, int>>> step_times;  // step -> (time, rank)
  for (const auto& r : job.ranks) {
    for (const auto& c : r.collectives) {
      ++out.collectives;
      if (!c.has_run()) ++out.without_run;
      if (c.step < 0) ++out.outside_steps;
      const Key key{c.group, c.name, c.bytes, c.dtype};
      auto& k = classes[key];
      k.name = c.name;
      k.group = c.group;
      k.dtype = c.dtype;
      k.group_size = c.group_size;
      k.bytes = c.bytes;
      ++k.count;
      if (c.has_run()) times[key].push_back(c.run.end - c.run.begin);
      if (const auto l = last.find(&c); l != last.end()) {
        const double split = std::min(std::max(l->second, c.run.begin), c.run.end);
        parts[key].first.push_back(split - c.run.begin);
        parts[key].second.push_back(c.run.end - split);
      }
    }
    for (size_t i = 0; i < r.steps.size(); ++i) {
      StepFigures f;
      f.rank = r.rank;
      f.step = r.step_numbers[i];
      const Span step = r.steps[i];
      f.time_us = step.end - step.begin;
      std::vector<Span> runs, waiting, moving;
      for (const auto& c : r.collectives) {
        if (c.step != f.step) continue;
        ++f.collectives;
        if (c.bytes > 0) f.bytes += c.bytes;
        if (!c.has_run()) continue;
        runs.push_back(c.run);
        const auto l = last.find(&c);
        const double split = l == last.end() ? c.run.begin : std::min(std::max(l->second, c.run.begin), c.run.end);
        waiting.push_back({c.run.begin, split});
        moving.push_back({split, c.run.end});
      }
      runs = trace::merge(std::move(runs));
      if (out.split) {
        f.waiting_us = trace::length(trace::subtract(trace::merge(std::move(waiting)), trace::merge(std::move(moving))));
        f.moving_us = trace::length(runs) - f.waiting_us;
      }
      double window_end = step.end;
      if (r.device == "cuda" && !runs.empty()) window_end = std::max(window_end, runs.back().end);
      f.compute_us = trace::length(clip(r.compute, step.begin, window_end));
      f.comm_us = trace::length(runs);
      f.overlapped_us = trace::intersection(runs, r.compute);
      f.exposed_us = f.comm_us - f.overlapped_us;
      out.steps.push_back(f);
      step_times[f.step].emplace_back(f.time_us, r.rank);
    }
  }
  for (auto& [key, k] : classes) {
    const auto it = times.find(key);
    if (it != times.end() && !it->second.empty()) {
      k.timed = static_cast<int>(it->second.size());
      k.time_p50_us = stats::median(it->second);
      k.time_min_us = stats::min(it->second);
      k.time_max_us = stats::max(it->second);
      if (k.bytes > 0 && k.time_p50_us > 0) {
        k.algbw_gbs = static_cast<double>(k.bytes) / k.time_p50_us / 1e3;  // bytes/us -> GB/s
        k.busbw_gbs = k.algbw_gbs * bus_factor(k.name, k.group_size);
      }
    }
    if (const auto p = parts.find(key); p != parts.end() && !p->second.first.empty()) {
      k.wait_p50_us = stats::median(p->second.first);
      k.move_p50_us = stats::median(p->second.second);
      if (k.bytes > 0 && k.move_p50_us > 0)
        k.busbw_moving_gbs = static_cast<double>(k.bytes) / k.move_p50_us / 1e3 * bus_factor(k.name, k.group_size);
    }
    out.classes.push_back(k);
  }
  for (const auto& [step, list] : step_times) {
    StepSpread s;
    s.step = step;
    s.ranks = static_cast<int>(list.size());
    const auto [lo, hi] = std::minmax_element(list.begin(), list.end());
    s.min_us = lo->first;
    s.max_us = hi->first;
    s.slowest_rank = hi->second;
    out.spread.push_back(s);
  }
  return out;
}

std::string check_consistent(const JobTrace& job) {
  if (const std::string why = unknown_groups(job); !why.empty()) return why;
  // The iterations every rank traced.
  std::set<int> common;
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    const std::set<int> mine(job.ranks[i].step_numbers.begin(), job.ranks[i].step_numbers.end());
    if (i == 0) {
      common = mine;
      continue;
    }
    std::set<int> both;
    std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(), std::inserter(both, both.end()));
    common = both;
  }
  // Each group's sequence per rank.
  std::map<std::string, std::map<int, std::vector<const Collective*>>> seq;
  for (const auto& r : job.ranks)
    for (const auto& c : r.collectives)
      if (common.count(c.step) && c.name != "send" && c.name != "recv") seq[c.group][r.rank].push_back(&c);
  for (const auto& [group, by_rank] : seq) {
    const std::string gname = group.empty() ? "the default group" : "group " + group;
    const auto& [first_rank, first] = *by_rank.begin();
    for (const auto& [rank, mine] : by_rank) {
      for (size_t k = 0; k < std::min(first.size(), mine.size()); ++k) {
        const Collective& a = *first[k];
        const Collective& b = *mine[k];
        if (a.name == b.name && std::max(a.in_nelems, a.out_nelems) == std::max(b.in_nelems, b.out_nelems) &&
            (a.dtype.empty() || b.dtype.empty() || a.dtype == b.dtype))
          continue;
        // Its place in its iteration, counted from 1.
        const auto in_step = std::count_if(first.begin(), first.begin() + static_cast<long>(k) + 1,
                                           [&](const Collective* c) { return c->step == a.step; });
        throw UsageError(fmt::format(
            "ranks disagree in {}: collective {} of ProfilerStep#{} is rank {}'s {} but rank {}'s {} (a job that "
            "hangs or reduces the wrong tensors there)",
            gname, in_step, a.step, first_rank, describe(a), rank, describe(b)));
      }
      if (mine.size() != first.size())
        throw UsageError(fmt::format("ranks disagree in {}: rank {} issued {} collectives over the iterations every "
                                     "rank traced, rank {} {}",
                                     gname, first_rank, first.size(), rank, mine.size()));
    }
  }
  // Groups every member must be in: a member whose trace has none of the
  // group's collectives while others do.
  for (const auto& [group, by_rank] : seq) {
    for (const auto& r : job.ranks) {
      bool member = group.empty();
      for (const auto& g : r.groups)
        if (g.name == group) member = std::find(g.ranks.begin(), g.ranks.end(), r.rank) != g.ranks.end();
      if (member && !by_rank.count(r.rank))
        throw UsageError(fmt::format("ranks disagree in {}: rank {} issued none of its {} collectives",
                                     group.empty() ? "the default group" : "group " + group, r.rank,
                                     by_rank.begin()->second.size()));
    }
  }
  return "";
}

}  // namespace dtbench::job
