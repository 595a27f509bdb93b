#include "report/hybrid_record.h"

#include <algorithm>

#include <fmt/format.h>

#include "report/json_io.h"
#include "stats/stats.h"

namespace dtbench::report {

nlohmann::ordered_json to_json(const HybridTrainerRun& r) {
  nlohmann::ordered_json j{{"trainer", r.trainer},
                           {"epoch_seconds", r.epoch_seconds},
                           {"lookup_seconds", r.lookup_seconds},
                           {"last_epoch_bags", r.last_epoch_bags}};
  if (r.peak_bytes >= 0)
    j["memory"] = {{"peak_bytes", r.peak_bytes},
                   {"peak_rss_bytes", r.peak_rss_bytes},
                   {"model_state_bytes", r.model_state_bytes}};
  return j;
}

HybridTrainerRun hybrid_trainer_from_json(const nlohmann::json& j) {
  HybridTrainerRun r;
  r.trainer = json_field<int>(j, "trainer", "hybrid trainer");
  r.epoch_seconds = json_field<std::vector<double>>(j, "epoch_seconds", "hybrid trainer");
  r.lookup_seconds = json_field<std::vector<double>>(j, "lookup_seconds", "hybrid trainer");
  r.last_epoch_bags = json_field<std::int64_t>(j, "last_epoch_bags", "hybrid trainer");
  if (j.contains("memory")) {
    const auto& m = j.at("memory");
    r.peak_bytes = json_field<std::int64_t>(m, "peak_bytes", "hybrid trainer memory");
    r.peak_rss_bytes = json_field<std::int64_t>(m, "peak_rss_bytes", "hybrid trainer memory");
    r.model_state_bytes = json_field<std::int64_t>(m, "model_state_bytes", "hybrid trainer memory");
  }
  return r;
}

HybridRow hybrid_row(const std::string& name, const std::vector<double>& s, std::int64_t bags) {
  HybridRow row;
  row.name = name;
  if (s.empty()) return row;
  const double p[4] = {stats::percentile(s, 50), stats::percentile(s, 75), stats::percentile(s, 90),
                       stats::percentile(s, 95)};
  row.p50 = p[0];
  row.p75 = p[1];
  row.p90 = p[2];
  row.p95 = p[3];
  for (int i = 0; i < 4; ++i) row.bags_per_s[i] = p[i] > 0 ? static_cast<double>(bags) / p[i] : 0;
  return row;
}

HybridRow hybrid_all_row(const std::vector<HybridTrainerRun>& runs) {
  std::vector<double> all;
  std::int64_t bags = 0;
  for (const auto& t : runs) {
    all.insert(all.end(), t.epoch_seconds.begin(), t.epoch_seconds.end());
    bags += t.last_epoch_bags;
  }
  return hybrid_row("All", all, bags);
}

void print_hybrid_table(std::ostream& os, const std::vector<HybridTrainerRun>& runs) {
  os << fmt::format("{:<10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>14} {:>13} {:>12}\n", "sec/epoch",
                    "p50", "p75", "p90", "p95", "bags/s p50", "lookup p50 us", "peak MiB", "RSS peak MiB");
  std::vector<double> all_lookup;
  auto mib = [](std::int64_t b) { return b >= 0 ? fmt::format("{:.1f}", static_cast<double>(b) / (1 << 20)) : std::string("-"); };
  auto print = [&](const HybridRow& r, double lookup_p50, std::int64_t peak, std::int64_t rss) {
    os << fmt::format("{:<10} {:>10.4f} {:>10.4f} {:>10.4f} {:>10.4f} {:>10.0f} {:>14.1f} {:>13} {:>12}\n",
                      r.name, r.p50, r.p75, r.p90, r.p95, r.bags_per_s[0], lookup_p50 * 1e6, mib(peak), mib(rss));
  };
  std::int64_t max_peak = -1, max_rss = -1;
  bool all_recorded = !runs.empty();
  for (const auto& t : runs) {
    all_lookup.insert(all_lookup.end(), t.lookup_seconds.begin(), t.lookup_seconds.end());
    print(hybrid_row(fmt::format("Trainer{}", t.trainer), t.epoch_seconds, t.last_epoch_bags),
          t.lookup_seconds.empty() ? 0 : stats::percentile(t.lookup_seconds, 50), t.peak_bytes,
          t.peak_rss_bytes);
    all_recorded = all_recorded && t.peak_bytes >= 0;
    max_peak = std::max(max_peak, t.peak_bytes);
    max_rss = std::max(max_rss, t.peak_rss_bytes);
  }
  // "All": every trainer's epochs together; bags summed over trainers;
  // memory: the largest trainer's.
  print(hybrid_all_row(runs), all_lookup.empty() ? 0 : stats::percentile(all_lookup, 50),
        all_recorded ? max_peak : -1, all_recorded ? max_rss : -1);
}

}  // namespace dtbench::report
