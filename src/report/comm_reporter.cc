#include "report/comm_reporter.h"

#include <fmt/format.h>

namespace dtbench::report {
namespace {

std::string placement_cells(const CommTiming& t, bool with_ranks) {
  if (!t.ran) {
    return with_ranks ? fmt::format("{:>10} {:>7} {:>7} {:>6} {:>9} {:>9}", "n/a", "", "", "", "", "")
                      : fmt::format("{:>10} {:>7} {:>7} {:>6}", "n/a", "", "", "");
  }
  std::string s = fmt::format("{:>10.2f} {:>7.2f} {:>7.2f} {:>6}", t.time_us, t.algbw_gbs,
                              t.busbw_gbs, t.wrong);
  if (with_ranks) s += fmt::format(" {:>9.2f} {:>9.2f}", t.min_rank_us, t.max_rank_us);
  return s;
}

nlohmann::ordered_json timing_json(const CommTiming& t) {
  if (!t.ran) return nullptr;
  return {{"time_us", t.time_us},         {"algbw_gbs", t.algbw_gbs}, {"busbw_gbs", t.busbw_gbs},
          {"wrong", t.wrong},             {"min_rank_us", t.min_rank_us},
          {"max_rank_us", t.max_rank_us}, {"rank_us", t.rank_us},
          {"node_us", t.node_us},         {"cpu_util", t.cpu_util}};
}

CommTiming timing_from_json(const nlohmann::ordered_json& j) {
  CommTiming t;
  if (j.is_null()) return t;
  t.ran = true;
  t.time_us = j.at("time_us").get<double>();
  t.algbw_gbs = j.at("algbw_gbs").get<double>();
  t.busbw_gbs = j.at("busbw_gbs").get<double>();
  t.wrong = j.at("wrong").get<std::int64_t>();
  t.min_rank_us = j.at("min_rank_us").get<double>();
  t.max_rank_us = j.at("max_rank_us").get<double>();
  t.rank_us = j.at("rank_us").get<std::vector<double>>();
  if (j.contains("node_us")) t.node_us = j.at("node_us").get<std::vector<double>>();
  if (j.contains("cpu_util")) t.cpu_util = j.at("cpu_util").get<double>();
  return t;
}

}  // namespace

void CommConsoleReporter::header() {
  out_ << fmt::format("#{:>62}   {:<52}  {}\n", "", "out-of-place", "in-place");
  out_ << fmt::format(
      "# {:>12} {:>12} {:>14} {:>8} {:>5}  {:>10} {:>7} {:>7} {:>6} {:>9} {:>9}  {:>10} {:>7} "
      "{:>7} {:>6}\n",
      "size", "count", "collective", "type", "redop", "time", "algbw", "busbw", "#wrong",
      "min-rank", "max-rank", "time", "algbw", "busbw", "#wrong");
  out_ << fmt::format(
      "# {:>12} {:>12} {:>14} {:>8} {:>5}  {:>10} {:>7} {:>7} {:>6} {:>9} {:>9}  {:>10} {:>7} "
      "{:>7} {:>6}\n",
      "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)",
      "(GB/s)", "(GB/s)", "");
  out_.flush();
}

void CommConsoleReporter::row(const CommRecord& r) {
  out_ << fmt::format("  {:>12} {:>12} {:>14} {:>8} {:>5}  {}  {}\n", r.bytes, r.count,
                      r.collective, r.dtype, r.op, placement_cells(r.out_of_place, true),
                      placement_cells(r.in_place, false));
  out_.flush();
}

void CommConsoleReporter::footer(const std::vector<CommRecord>& records,
                                 const std::vector<std::string>& skipped) {
  for (const auto& s : skipped) out_ << "# skipped " << s << "\n";
  const auto wrong = total_wrong(records);
  out_ << fmt::format("# Out of bounds values : {} {}\n", wrong, wrong == 0 ? "OK" : "FAILED");
  out_ << fmt::format("# Avg bus bandwidth    : {:.4f} GB/s\n", average_busbw(records));
  out_.flush();
}

void CommConsoleReporter::nodes(const std::vector<CommRecord>& records,
                                const std::vector<std::string>& node_names) {
  if (node_names.size() < 2) return;
  const auto ratios = node_time_ratios(records, node_names.size());
  std::size_t slowest = 0;
  for (std::size_t n = 0; n < ratios.size(); ++n)
    if (ratios[n] > ratios[slowest]) slowest = n;
  out_ << "# Per node: mean time of its ranks / the job's mean time, over every row\n";
  for (std::size_t n = 0; n < node_names.size(); ++n)
    out_ << fmt::format("#   {:<40} {:.3f}x{}\n", node_names[n], ratios[n],
                        n == slowest ? "  (slowest)" : "");
  out_.flush();
}

std::vector<double> node_time_ratios(const std::vector<CommRecord>& records, std::size_t nodes) {
  std::vector<double> sum(nodes, 0.0);
  int n = 0;
  for (const auto& r : records) {
    for (const auto* t : {&r.out_of_place, &r.in_place}) {
      if (!t->ran || t->node_us.size() != nodes || !(t->time_us > 0)) continue;
      for (std::size_t i = 0; i < nodes; ++i) sum[i] += t->node_us[i] / t->time_us;
      ++n;
    }
  }
  for (auto& x : sum) x = n == 0 ? 0.0 : x / n;
  return sum;
}

double average_busbw(const std::vector<CommRecord>& records) {
  double sum = 0;
  int n = 0;
  for (const auto& r : records) {
    for (const auto* t : {&r.out_of_place, &r.in_place}) {
      if (!t->ran) continue;
      sum += t->busbw_gbs;
      ++n;
    }
  }
  return n == 0 ? 0 : sum / n;
}

std::int64_t total_wrong(const std::vector<CommRecord>& records) {
  std::int64_t w = 0;
  for (const auto& r : records) w += r.out_of_place.wrong + r.in_place.wrong;
  return w;
}

nlohmann::ordered_json to_json(const CommRecord& r) {
  return {{"collective", r.collective},
          {"bytes", r.bytes},
          {"count", r.count},
          {"dtype", r.dtype},
          {"op", r.op},
          {"root", r.root},
          {"out_of_place", timing_json(r.out_of_place)},
          {"in_place", timing_json(r.in_place)}};
}

CommRecord comm_record_from_json(const nlohmann::ordered_json& j) {
  CommRecord r;
  r.collective = j.at("collective").get<std::string>();
  r.bytes = j.at("bytes").get<std::uint64_t>();
  r.count = j.at("count").get<std::uint64_t>();
  r.dtype = j.at("dtype").get<std::string>();
  r.op = j.at("op").get<std::string>();
  r.root = j.at("root").get<int>();
  r.out_of_place = timing_from_json(j.at("out_of_place"));
  r.in_place = timing_from_json(j.at("in_place"));
  return r;
}

}  // namespace dtbench::report
