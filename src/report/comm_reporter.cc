#include "report/comm_reporter.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "stats/stats.h"

namespace dtbench::report {
namespace {

std::string size_text(std::uint64_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

// A field under its nccl-tests name (schema 3) or its earlier dtbench name.
const nlohmann::ordered_json& named(const nlohmann::ordered_json& j, const char* name, const char* before) {
  return j.contains(name) ? j.at(name) : j.at(before);
}

// Samples to the nanosecond: shorter JSON, nothing a clock resolves lost.
std::vector<std::vector<double>> rounded(std::vector<std::vector<double>> v) {
  for (auto& row : v)
    for (auto& x : row) x = std::round(x * 1000) / 1000;
  return v;
}

nlohmann::ordered_json with_compute_json(const CommWithCompute& w) {
  if (!w.ran) return nullptr;
  return {{"time", w.time_us},         {"slowdown", w.slowdown},           {"gemm_us_alone", w.gemm_us_alone},
          {"gemm_us_during", w.gemm_us_during}, {"gemm_slowdown", w.gemm_slowdown}, {"gemms_during", w.gemms_during},
          {"iters", w.iters}};
}

nlohmann::ordered_json timing_json(const CommTiming& t, const std::vector<double>& qs) {
  if (!t.ran) return nullptr;
  nlohmann::ordered_json pct = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < qs.size() && i < t.percentile_us.size(); ++i) pct[percentile_name(qs[i])] = t.percentile_us[i];
  nlohmann::ordered_json spikes = nlohmann::ordered_json::array();
  for (const auto& s : t.spike_list) spikes.push_back({{"rank", s.rank}, {"iter", s.iter}, {"us", s.us}});
  // nccl-tests' names (its -J report) for its four columns; dtbench's own
  // figures after them.
  return {{"time", t.time_us},
          {"alg_bw", t.algbw_gbs},
          {"bus_bw", t.busbw_gbs},
          {"nwrong", t.wrong == kNotChecked ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(t.wrong)},
          {"percentiles_us", pct},
          {"rank_us", t.rank_us},
          {"node_us", t.node_us},
          {"lateness_us", t.lateness_us},
          {"late_rank", t.late_rank},
          {"late_us", t.late_us},
          {"straggler", t.straggler},
          {"spikes", t.spikes},
          {"spike_list", spikes},
          {"cpu_util", t.cpu_util},
          {"ceiling_gbs", t.ceiling_gbs},
          {"of_ceiling", t.of_ceiling},
          {"link_gbs", t.link_gbs},
          {"of_link", t.of_link},
          {"with_compute", with_compute_json(t.with_compute)},
          {"samples_us", rounded(t.samples_us)}};
}

CommTiming timing_from_json(const nlohmann::ordered_json& j, const std::vector<double>& qs) {
  CommTiming t;
  if (j.is_null()) return t;
  t.ran = true;
  t.time_us = named(j, "time", "time_us").get<double>();
  t.algbw_gbs = named(j, "alg_bw", "algbw_gbs").get<double>();
  t.busbw_gbs = named(j, "bus_bw", "busbw_gbs").get<double>();
  const auto& wrong = named(j, "nwrong", "wrong");
  t.wrong = wrong.is_null() ? kNotChecked : wrong.get<std::int64_t>();
  t.rank_us = j.at("rank_us").get<std::vector<double>>();
  if (j.contains("node_us")) t.node_us = j.at("node_us").get<std::vector<double>>();
  if (j.contains("cpu_util")) t.cpu_util = j.at("cpu_util").get<double>();
  if (j.contains("ceiling_gbs")) t.ceiling_gbs = j.at("ceiling_gbs").get<double>();
  if (j.contains("of_ceiling")) t.of_ceiling = j.at("of_ceiling").get<double>();
  if (j.contains("link_gbs")) t.link_gbs = j.at("link_gbs").get<double>();
  if (j.contains("of_link")) t.of_link = j.at("of_link").get<double>();
  if (j.contains("with_compute") && !j.at("with_compute").is_null()) {
    const auto& w = j.at("with_compute");
    t.with_compute.ran = true;
    t.with_compute.time_us = w.at("time").get<double>();
    t.with_compute.slowdown = w.at("slowdown").get<double>();
    t.with_compute.gemm_us_alone = w.at("gemm_us_alone").get<double>();
    t.with_compute.gemm_us_during = w.at("gemm_us_during").get<double>();
    t.with_compute.gemm_slowdown = w.at("gemm_slowdown").get<double>();
    t.with_compute.gemms_during = w.at("gemms_during").get<int>();
    if (w.contains("iters")) t.with_compute.iters = w.at("iters").get<int>();
  }
  // Reports written before per-iteration samples have none of these.
  if (j.contains("percentiles_us"))
    for (double q : qs) t.percentile_us.push_back(j.at("percentiles_us").at(percentile_name(q)).get<double>());
  if (j.contains("lateness_us")) t.lateness_us = j.at("lateness_us").get<std::vector<double>>();
  if (j.contains("late_rank")) t.late_rank = j.at("late_rank").get<int>();
  if (j.contains("late_us")) t.late_us = j.at("late_us").get<double>();
  if (j.contains("straggler")) t.straggler = j.at("straggler").get<bool>();
  if (j.contains("spikes")) t.spikes = j.at("spikes").get<std::int64_t>();
  if (j.contains("spike_list"))
    for (const auto& s : j.at("spike_list"))
      t.spike_list.push_back({s.at("rank").get<int>(), s.at("iter").get<int>(), s.at("us").get<double>()});
  if (j.contains("samples_us")) t.samples_us = j.at("samples_us").get<std::vector<std::vector<double>>>();
  return t;
}

// The timed placements of a record.
std::vector<const CommTiming*> timed(const CommRecord& r) {
  std::vector<const CommTiming*> out;
  for (const auto* t : {&r.out_of_place, &r.in_place})
    if (t->ran) out.push_back(t);
  return out;
}

}  // namespace

std::string CommConsoleReporter::cells(const CommTiming& t) const {
  std::string s;
  if (!t.ran) {
    s = fmt::format("{:>10} {:>7} {:>7} {:>6}", "n/a", "", "", "");
    for (std::size_t i = 0; i < qs_.size(); ++i) s += fmt::format(" {:>9}", "");
    return s;
  }
  s = fmt::format("{:>10.2f} {:>7.2f} {:>7.2f} {:>6}", t.time_us, t.algbw_gbs, t.busbw_gbs,
                  t.wrong == kNotChecked ? std::string("N/A") : std::to_string(t.wrong));
  for (std::size_t i = 0; i < qs_.size(); ++i)
    s += i < t.percentile_us.size() ? fmt::format(" {:>9.2f}", t.percentile_us[i]) : fmt::format(" {:>9}", "");
  return s;
}

void CommConsoleReporter::header() {
  const std::size_t width = 33 + 10 * qs_.size();
  std::string names, units;
  for (double q : qs_) {
    names += fmt::format(" {:>9}", percentile_name(q));
    units += fmt::format(" {:>9}", "(us)");
  }
  const std::string placement_names = fmt::format("{:>10} {:>7} {:>7} {:>6}{}", "time", "algbw", "busbw", "#wrong", names);
  const std::string placement_units = fmt::format("{:>10} {:>7} {:>7} {:>6}{}", "(us)", "(GB/s)", "(GB/s)", "", units);
  out_ << fmt::format("#{:>58}{:<{}}  {}\n", "", "out-of-place", width, "in-place");
  out_ << fmt::format("# {:>12} {:>12} {:>14} {:>8} {:>5}  {}  {}\n", "size", "count", "collective", "type", "redop",
                      placement_names, placement_names);
  out_ << fmt::format("# {:>12} {:>12} {:>14} {:>8} {:>5}  {}  {}\n", "(B)", "(elements)", "", "", "",
                      placement_units, placement_units);
  out_.flush();
}

void CommConsoleReporter::row(const CommRecord& r) {
  // With --split, each group's row names its group: "allreduce g1".
  const std::string name = r.group >= 0 ? fmt::format("{} g{}", r.collective, r.group) : r.collective;
  out_ << fmt::format("  {:>12} {:>12} {:>14} {:>8} {:>5}  {}  {}\n", r.bytes, r.count, name, r.dtype, r.op,
                      cells(r.out_of_place), cells(r.in_place));
  out_.flush();
}

void CommConsoleReporter::footer(const std::vector<CommRecord>& records, const std::vector<std::string>& skipped,
                                 const std::vector<std::string>& notes, const std::vector<std::string>& node_names,
                                 const std::vector<int>& node_of_rank) {
  for (const auto& s : skipped) out_ << "# skipped " << s << "\n";
  for (const auto& n : notes) out_ << "# note: " << n << "\n";
  // Late ranks: per rank, the rows where it was flagged and its lateness there.
  std::map<int, std::vector<const CommRecord*>> rows_of;
  std::map<int, std::vector<double>> late_of;
  std::size_t placements = 0;
  for (const auto& r : records)
    for (const auto* t : timed(r)) {
      ++placements;
      if (!t->straggler) continue;
      if (rows_of[t->late_rank].empty() || rows_of[t->late_rank].back() != &r) rows_of[t->late_rank].push_back(&r);
      late_of[t->late_rank].push_back(t->late_us);
    }
  if (rows_of.empty()) {
    out_ << "# Late ranks           : none (no rank started later than clock error and jitter explain)\n";
  } else {
    for (const auto& [rank, rows] : rows_of) {
      std::string where;
      if (rank >= 0 && static_cast<std::size_t>(rank) < node_of_rank.size() && node_names.size() > 1) {
        const auto node = static_cast<std::size_t>(node_of_rank[static_cast<std::size_t>(rank)]);
        if (node < node_names.size()) where = ", " + node_names[node];
      }
      std::uint64_t lo = rows.front()->bytes, hi = lo;
      for (const auto* r : rows) {
        lo = std::min(lo, r->bytes);
        hi = std::max(hi, r->bytes);
      }
      out_ << fmt::format("# Late rank            : rank {}{} started a median {:.1f} us after the median rank in {} of "
                          "{} timed rows ({}){}\n",
                          rank, where, stats::median(late_of[rank]), late_of[rank].size(), placements,
                          lo == hi ? size_text(lo) : size_text(lo) + " to " + size_text(hi),
                          late_of[rank].size() * 2 > placements ? ": a straggler" : "");
    }
  }
  std::int64_t spikes = 0;
  std::string first;
  for (const auto& r : records)
    for (const auto* t : timed(r)) {
      spikes += t->spikes;
      if (first.empty() && !t->spike_list.empty()) {
        // samples_us is indexed by the row's ranks (its group's, with --split).
        const int rank = t->spike_list[0].rank;
        std::size_t at = static_cast<std::size_t>(rank);
        if (!r.group_ranks.empty())
          at = static_cast<std::size_t>(std::find(r.group_ranks.begin(), r.group_ranks.end(), rank) - r.group_ranks.begin());
        const bool known = at < t->samples_us.size() && !t->samples_us[at].empty();
        first = fmt::format(" (first: {} {} rank {} iteration {}: {:.1f} us{})", r.collective, size_text(r.bytes), rank,
                            t->spike_list[0].iter, t->spike_list[0].us,
                            known ? fmt::format(" against a median {:.1f} us", stats::median(t->samples_us[at])) : "");
      }
    }
  out_ << fmt::format("# Spikes               : {} iteration(s) beyond their rank's median + k * MAD{}\n", spikes, first);
  // Per collective, the row closest to a ceiling: the copy's, then (between
  // nodes) the link's. `gbs` and `of` pick the ceiling's fields.
  auto closest = [&](double CommTiming::*gbs, double CommTiming::*of, const char* label, const char* what) {
    std::vector<std::pair<std::string, std::pair<const CommRecord*, const CommTiming*>>> best;
    for (const auto& r : records)
      for (const auto* t : timed(r)) {
        if (t->*gbs <= 0) continue;
        auto it = std::find_if(best.begin(), best.end(), [&](const auto& b) { return b.first == r.collective; });
        if (it == best.end())
          best.push_back({r.collective, {&r, t}});
        else if (t->*of > it->second.second->*of)
          it->second = {&r, t};
      }
    for (const auto& [name, rt] : best)
      out_ << fmt::format("# {:<21}: {} at most {:.0f}% ({}: busbw {:.3f} GB/s, {} {:.3f} GB/s)\n", label, name,
                          rt.second->*of * 100, size_text(rt.first->bytes), rt.second->busbw_gbs, what,
                          rt.second->*gbs);
  };
  closest(&CommTiming::ceiling_gbs, &CommTiming::of_ceiling, "Of the copy ceiling", "a plain copy of it");
  closest(&CommTiming::link_gbs, &CommTiming::of_link, "Of the link ceiling", "a raw TCP stream between nodes");
  // --with-compute: per collective, the median slowdowns over its rows.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CommWithCompute*>> wc;
  for (const auto& r : records)
    for (const auto* t : timed(r))
      if (t->with_compute.ran) {
        if (!wc.count(r.collective)) order.push_back(r.collective);
        wc[r.collective].push_back(&t->with_compute);
      }
  for (const auto& name : order) {
    std::vector<double> coll, gemm;
    int fewest = -1, most_iters = 0;
    for (const auto* w : wc[name]) {
      most_iters = std::max(most_iters, w->iters);
      coll.push_back(w->slowdown);
      if (w->gemm_slowdown > 0) gemm.push_back(w->gemm_slowdown);
      fewest = fewest < 0 ? w->gemms_during : std::min(fewest, w->gemms_during);
    }
    out_ << fmt::format("# With compute         : {}: the collective {:.2f}x its time alone, the products {} (median "
                        "over {} rows; at least {} product(s) in each row's timed iterations, at most {} "
                        "iterations)\n",
                        name, stats::median(coll),
                        gemm.empty() ? std::string("not timed (none ended inside the timed iterations)")
                                     : fmt::format("{:.2f}x theirs", stats::median(gemm)),
                        coll.size(), fewest, most_iters);
  }
  const auto wrong = total_wrong(records);
  if (any_checked(records) || records.empty())
    out_ << fmt::format("# Out of bounds values : {} {}\n", wrong, wrong == 0 ? "OK" : "FAILED");
  else
    out_ << "# Out of bounds values : N/A (not checked: -c 0)\n";
  out_ << fmt::format("# Avg bus bandwidth    : {:.4f} GB/s\n", average_busbw(records));
  out_.flush();
}

void CommConsoleReporter::nodes(const std::vector<CommRecord>& records, const std::vector<std::string>& node_names,
                                const std::vector<int>& node_of_rank) {
  if (node_names.size() < 2) return;
  const auto late = node_lateness(records, node_of_rank, node_names.size());
  std::size_t latest = 0;
  for (std::size_t n = 0; n < late.size(); ++n)
    if (late[n] > late[latest]) latest = n;
  out_ << "# Per node: median start after the median rank, over every row\n";
  for (std::size_t n = 0; n < node_names.size(); ++n)
    out_ << fmt::format("#   {:<40} {:>10.1f} us{}\n", node_names[n], late[n], n == latest ? "  (latest)" : "");
  out_.flush();
}

std::vector<double> node_lateness(const std::vector<CommRecord>& records, const std::vector<int>& node_of_rank,
                                  std::size_t nodes) {
  std::vector<std::vector<double>> per(nodes);
  for (const auto& r : records)
    for (const auto* t : timed(r)) {
      if (t->lateness_us.size() != node_of_rank.size()) continue;
      std::vector<std::vector<double>> mine(nodes);
      for (std::size_t k = 0; k < node_of_rank.size(); ++k) {
        const auto node = static_cast<std::size_t>(node_of_rank[k]);
        if (node < nodes) mine[node].push_back(t->lateness_us[k]);
      }
      for (std::size_t n = 0; n < nodes; ++n)
        if (!mine[n].empty()) per[n].push_back(stats::median(mine[n]));
    }
  std::vector<double> out;
  for (const auto& v : per) out.push_back(v.empty() ? 0.0 : stats::median(v));
  return out;
}

double average_busbw(const std::vector<CommRecord>& records) {
  double sum = 0;
  int n = 0;
  for (const auto& r : records)
    for (const auto* t : timed(r)) {
      sum += t->busbw_gbs;
      ++n;
    }
  return n == 0 ? 0 : sum / n;
}

std::int64_t total_wrong(const std::vector<CommRecord>& records) {
  std::int64_t w = 0;
  for (const auto& r : records)
    for (const CommTiming* t : {&r.out_of_place, &r.in_place})
      if (t->ran && t->wrong > 0) w += t->wrong;
  return w;
}

bool any_checked(const std::vector<CommRecord>& records) {
  for (const auto& r : records)
    for (const CommTiming* t : {&r.out_of_place, &r.in_place})
      if (t->ran && t->wrong != kNotChecked) return true;
  return false;
}

nlohmann::ordered_json to_json(const CommRecord& r) {
  nlohmann::ordered_json j;
  j["cycle"] = r.cycle;
  if (r.group >= 0) {
    j["group"] = r.group;
    j["group_ranks"] = r.group_ranks;
  }
  j["collective"] = r.collective;
  j["size"] = r.bytes;
  j["count"] = r.count;
  j["type"] = r.dtype;
  j["redop"] = r.op;
  j["root"] = r.root;
  j["percentiles"] = r.percentiles;
  j["out_of_place"] = timing_json(r.out_of_place, r.percentiles);
  j["in_place"] = timing_json(r.in_place, r.percentiles);
  return j;
}

void write_comm_csv(std::ostream& out, const std::vector<CommRecord>& records, int average) {
  static const char* const kStat[] = {"rank0", "mean", "min", "max"};
  const char* stat = average >= 0 && average <= 3 ? kStat[average] : "mean";
  const std::vector<double> qs = records.empty() ? std::vector<double>{} : records.front().percentiles;
  out << "cycle,group,collective,placement,size,count,type,redop,root,time,algbw,busbw,#wrong,time_stat";
  for (double q : qs) out << ',' << percentile_name(q);
  out << ",late_rank,late_us,spikes,ceiling_gbs,of_ceiling,link_gbs,of_link\n";
  for (const auto& r : records)
    for (const auto& [name, t] : {std::pair<const char*, const CommTiming*>{"out_of_place", &r.out_of_place},
                                  {"in_place", &r.in_place}}) {
      if (!t->ran) continue;
      out << fmt::format("{},{},{},{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{},{}", r.cycle, r.group, r.collective,
                         name, r.bytes, r.count, r.dtype, r.op, r.root, t->time_us, t->algbw_gbs, t->busbw_gbs,
                         t->wrong == kNotChecked ? std::string() : std::to_string(t->wrong),
                         r.collective == "pingpong" ? "rank0" : stat);
      for (std::size_t i = 0; i < qs.size(); ++i)
        out << ',' << (i < t->percentile_us.size() ? fmt::format("{:.9g}", t->percentile_us[i]) : std::string());
      out << fmt::format(",{},{:.9g},{},{:.9g},{:.9g},{:.9g},{:.9g}\n", t->late_rank, t->late_us, t->spikes,
                         t->ceiling_gbs, t->of_ceiling, t->link_gbs, t->of_link);
    }
}

CommRecord comm_record_from_json(const nlohmann::ordered_json& j) {
  CommRecord r;
  if (j.contains("cycle")) r.cycle = j.at("cycle").get<int>();
  if (j.contains("group")) r.group = j.at("group").get<int>();
  if (j.contains("group_ranks")) r.group_ranks = j.at("group_ranks").get<std::vector<int>>();
  r.collective = j.at("collective").get<std::string>();
  r.bytes = named(j, "size", "bytes").get<std::uint64_t>();
  r.count = j.at("count").get<std::uint64_t>();
  r.dtype = named(j, "type", "dtype").get<std::string>();
  r.op = named(j, "redop", "op").get<std::string>();
  r.root = j.at("root").get<int>();
  if (j.contains("percentiles")) r.percentiles = j.at("percentiles").get<std::vector<double>>();
  r.out_of_place = timing_from_json(j.at("out_of_place"), r.percentiles);
  r.in_place = timing_from_json(j.at("in_place"), r.percentiles);
  return r;
}

}  // namespace dtbench::report
