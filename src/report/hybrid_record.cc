#include "report/hybrid_record.h"

#include <algorithm>

#include <fmt/format.h>

#include "report/json_io.h"
#include "stats/stats.h"

namespace dtbench::report {

nlohmann::ordered_json to_json(const HybridTrainerRun& r) {
  nlohmann::ordered_json j{{"trainer", r.trainer},
                           {"iteration_seconds", r.iteration_seconds},
                           {"lookup_seconds", r.lookup_seconds}};
  if (r.peak_bytes >= 0)
    j["memory"] = {{"peak_bytes", r.peak_bytes},
                   {"peak_rss_bytes", r.peak_rss_bytes},
                   {"model_state_bytes", r.model_state_bytes}};
  return j;
}

HybridTrainerRun hybrid_trainer_from_json(const nlohmann::json& j) {
  HybridTrainerRun r;
  r.trainer = json_field<int>(j, "trainer", "hybrid trainer");
  r.iteration_seconds = json_field<std::vector<double>>(j, "iteration_seconds", "hybrid trainer");
  r.lookup_seconds = json_field<std::vector<double>>(j, "lookup_seconds", "hybrid trainer");
  if (j.contains("memory")) {
    const auto& m = j.at("memory");
    r.peak_bytes = json_field<std::int64_t>(m, "peak_bytes", "hybrid trainer memory");
    r.peak_rss_bytes = json_field<std::int64_t>(m, "peak_rss_bytes", "hybrid trainer memory");
    r.model_state_bytes = json_field<std::int64_t>(m, "model_state_bytes", "hybrid trainer memory");
  }
  return r;
}

HybridRow hybrid_row(const std::string& name, const std::vector<double>& s, int batch_size) {
  HybridRow row;
  row.name = name;
  if (s.empty()) return row;
  row.p50 = stats::percentile(s, 50);
  row.p75 = stats::percentile(s, 75);
  row.p90 = stats::percentile(s, 90);
  row.p95 = stats::percentile(s, 95);
  row.examples_per_s = row.p50 > 0 ? batch_size / row.p50 : 0;
  return row;
}

void print_hybrid_table(std::ostream& os, const std::vector<HybridTrainerRun>& runs, int batch_size) {
  os << fmt::format("{:<10} {:>10} {:>10} {:>10} {:>10} {:>12} {:>14} {:>13} {:>12}\n", "trainer",
                    "p50 (s)", "p75 (s)", "p90 (s)", "p95 (s)", "examples/s", "lookup p50 us",
                    "peak MiB", "RSS peak MiB");
  std::vector<double> all, all_lookup;
  auto mib = [](std::int64_t b) { return b >= 0 ? fmt::format("{:.1f}", static_cast<double>(b) / (1 << 20)) : std::string("-"); };
  auto print = [&](const HybridRow& r, double lookup_p50, std::int64_t peak, std::int64_t rss) {
    os << fmt::format("{:<10} {:>10.6f} {:>10.6f} {:>10.6f} {:>10.6f} {:>12.1f} {:>14.1f} {:>13} {:>12}\n",
                      r.name, r.p50, r.p75, r.p90, r.p95, r.examples_per_s, lookup_p50 * 1e6, mib(peak),
                      mib(rss));
  };
  std::int64_t max_peak = -1, max_rss = -1;
  bool all_recorded = !runs.empty();
  for (const auto& t : runs) {
    all.insert(all.end(), t.iteration_seconds.begin(), t.iteration_seconds.end());
    all_lookup.insert(all_lookup.end(), t.lookup_seconds.begin(), t.lookup_seconds.end());
    print(hybrid_row(fmt::format("Trainer{}", t.trainer), t.iteration_seconds, batch_size),
          t.lookup_seconds.empty() ? 0 : stats::percentile(t.lookup_seconds, 50), t.peak_bytes,
          t.peak_rss_bytes);
    all_recorded = all_recorded && t.peak_bytes >= 0;
    max_peak = std::max(max_peak, t.peak_bytes);
    max_rss = std::max(max_rss, t.peak_rss_bytes);
  }
  // "All": every trainer's iterations together; examples/s summed over
  // trainers; memory: the largest trainer's.
  auto row = hybrid_row("All", all, batch_size);
  row.examples_per_s *= static_cast<double>(runs.size());
  print(row, all_lookup.empty() ? 0 : stats::percentile(all_lookup, 50), all_recorded ? max_peak : -1,
        all_recorded ? max_rss : -1);
}

}  // namespace dtbench::report
