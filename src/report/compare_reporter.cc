#include "report/compare_reporter.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "stats/stats.h"

namespace dtbench::report {
namespace {

constexpr int kStats = 5;
const char* const kStatNames[kStats] = {"mean", "p50", "p90", "p95", "p99"};

std::array<double, kStats> stat_values(const std::vector<double>& xs) {
  const auto s = stats::summarize(xs);
  return {s.mean, s.p50, s.p90, s.p95, s.p99};
}

// The (model, bucket) groups in first-seen order.
std::vector<std::pair<std::string, double>> groups(const std::vector<ComparePoint>& points) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& p : points) {
    const std::pair<std::string, double> g{p.key.model, p.key.bucket_cap_mb};
    if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  }
  return out;
}

}  // namespace

std::string time_with_delta(double seconds, const double* baseline_seconds, bool is_baseline) {
  const std::string t = fmt::format("{:.2f}", seconds * 1e3);
  if (is_baseline) return t + " (base)";
  if (baseline_seconds == nullptr || !(*baseline_seconds > 0)) return t;
  return fmt::format("{} ({:+.1f}%)", t, stats::delta_percent(*baseline_seconds, seconds));
}

void CompareConsoleReporter::phase_tables(const std::vector<ComparePoint>& points) {
  for (const auto& [model, bucket] : groups(points)) {
    std::vector<const ComparePoint*> rows;
    for (const auto& p : points)
      if (p.key.model == model && p.key.bucket_cap_mb == bucket) rows.push_back(&p);
    // On a GPU the host clock's phases are launch times: the tables take
    // the GPU's own (CUDA events), as compare_ddp.py times its phases.
    bool device = !rows.empty();
    for (const auto* p : rows) device = device && has_device_phases(p->run);
    for (const auto& ph : kComparePhases) {
      out_ << fmt::format("\n== {}, bucket {:g} MB: {} (ms per iteration, slowest rank{}; "
                          "delta vs {} at the same ranks, negative = faster) ==\n",
                          model, bucket, ph.title, device ? ", GPU time by CUDA events" : "", baseline_);
      out_ << fmt::format("{:<30} {:>5}", "strategy", "ranks");
      for (const char* s : kStatNames) out_ << fmt::format(" {:>17}", s);
      out_ << "\n";
      for (const auto* p : rows) {
        auto times = [device](const DdpRun& run, const char* key) {
          return device ? device_phase_times(run, key) : phase_times(run, key);
        };
        const auto v = stat_values(times(p->run, ph.key));
        const auto* base = find_baseline(points, p->key, baseline_);
        const bool is_base = base == p;
        std::array<double, kStats> b{};
        if (base != nullptr) b = stat_values(times(base->run, ph.key));
        out_ << fmt::format("{:<30} {:>5}", p->key.strategy(), p->key.world_size);
        for (int i = 0; i < kStats; ++i)
          out_ << fmt::format(" {:>17}", time_with_delta(v[i], base ? &b[i] : nullptr, is_base));
        out_ << "\n";
      }
    }
  }
}

void CompareConsoleReporter::throughput_table(const std::vector<ComparePoint>& points) {
  const auto rows = throughput_rows(points);
  std::vector<std::string> models;
  for (const auto& r : rows)
    if (std::find(models.begin(), models.end(), r.key.model) == models.end())
      models.push_back(r.key.model);
  for (const auto& model : models) {
    out_ << fmt::format("\n== {}: throughput (examples/s; ± is 1.96σ over iterations; "
                        "efficiency = total / (ranks × 1-rank total)) ==\n",
                        model);
    out_ << fmt::format("{:<30} {:>8} {:>5} {:>22} {:>12} {:>11}\n", "strategy", "bucket", "ranks",
                        "per rank", "total", "efficiency");
    for (const auto& r : rows) {
      if (r.key.model != model) continue;
      out_ << fmt::format("{:<30} {:>5g} MB {:>5} {:>22} {:>12.1f} {:>11}\n", r.key.strategy(),
                          r.key.bucket_cap_mb, r.key.world_size,
                          fmt::format("{:.1f} ± {:.1f}", r.per_rank.mean, r.per_rank.half_width),
                          r.total,
                          r.efficiency ? fmt::format("{:.1f}%", *r.efficiency * 100) : "-");
    }
  }
}

void CompareConsoleReporter::compression_table(const std::vector<ComparePoint>& points) {
  bool any = false;
  for (const auto& p : points) any = any || p.key.compression != "none";
  if (!any) return;
  out_ << "\n== gradient compression: averaged gradient (the update) vs float32, measured on one "
          "extra untimed iteration ==\n";
  out_ << fmt::format("{:<30} {:>8} {:>5} {:>12} {:>12} {:>9} {:>17}\n", "strategy", "bucket",
                      "ranks", "max rel err", "rel L2 err", "overflows", "fp16 scales");
  for (const auto& p : points) {
    if (p.key.compression == "none") continue;
    const auto c = p.extras.value("compression", Json::object());
    const std::string scales =
        p.key.compression == "fp16"
            ? fmt::format("{:g}..{:g}", c.value("min_scale", 0.0), c.value("max_scale", 0.0))
            : "-";
    out_ << fmt::format("{:<30} {:>5g} MB {:>5} {:>12.3e} {:>12.3e} {:>9} {:>17}\n",
                        p.key.strategy(), p.key.bucket_cap_mb, p.key.world_size,
                        c.value("max_rel_error", 0.0), c.value("rel_l2_error", 0.0),
                        c.value("overflows", 0), scales);
  }
}

void CompareConsoleReporter::memory_table(const std::vector<ComparePoint>& points) {
  bool any = false;
  for (const auto& p : points) any = any || p.run.peak_bytes >= 0;
  if (!any) return;
  out_ << "\n== memory per rank (MiB): peak of tensors over the timed iterations; model state = "
          "parameters + gradients + optimizer state, and its formula; the process's RSS peak ==\n";
  out_ << fmt::format("{:<30} {:>8} {:>5} {:>12} {:>12} {:>12} {:>12}\n", "strategy", "bucket", "ranks",
                      "peak", "model state", "formula", "RSS peak");
  const double mib = 1048576.0;
  auto cell = [mib](std::int64_t b) { return b >= 0 ? fmt::format("{:.1f}", b / mib) : std::string("-"); };
  for (const auto& p : points)
    out_ << fmt::format("{:<30} {:>5g} MB {:>5} {:>12} {:>12} {:>12} {:>12}\n", p.key.strategy(),
                        p.key.bucket_cap_mb, p.key.world_size, cell(p.run.peak_bytes),
                        cell(p.run.model_state_bytes), cell(p.run.model_state_expected_bytes),
                        cell(p.run.peak_rss_bytes));
}

void CompareConsoleReporter::configuration_table(const std::vector<ComparePoint>& points) {
  const auto rows = throughput_rows(points);
  std::vector<double> buckets;
  for (const auto& r : rows)
    if (std::find(buckets.begin(), buckets.end(), r.key.bucket_cap_mb) == buckets.end())
      buckets.push_back(r.key.bucket_cap_mb);
  auto column = [&](const PointKey& k) {
    return buckets.size() > 1 ? fmt::format("{} {:g}MB", k.strategy(), k.bucket_cap_mb) : k.strategy();
  };
  std::vector<std::string> models;
  for (const auto& r : rows)
    if (std::find(models.begin(), models.end(), r.key.model) == models.end()) models.push_back(r.key.model);
  for (const auto& model : models) {
    std::vector<std::string> columns;
    std::vector<int> sizes;
    for (const auto& r : rows) {
      if (r.key.model != model) continue;
      const auto c = column(r.key);
      if (std::find(columns.begin(), columns.end(), c) == columns.end()) columns.push_back(c);
      if (std::find(sizes.begin(), sizes.end(), r.key.world_size) == sizes.end()) sizes.push_back(r.key.world_size);
    }
    if (columns.size() < 2) continue;
    std::sort(sizes.begin(), sizes.end());
    std::size_t width = 16;
    for (const auto& c : columns) width = std::max(width, c.size());
    out_ << fmt::format("\n== {}: total examples/s by ranks, one column per configuration ==\n", model);
    out_ << fmt::format("{:>5}", "ranks");
    for (const auto& c : columns) out_ << fmt::format(" {:>{}}", c, width);
    out_ << "\n";
    for (int w : sizes) {
      out_ << fmt::format("{:>5}", w);
      for (const auto& c : columns) {
        std::string cell = "-";
        for (const auto& r : rows)
          if (r.key.model == model && r.key.world_size == w && column(r.key) == c)
            cell = fmt::format("{:.1f}", r.total);
        out_ << fmt::format(" {:>{}}", cell, width);
      }
      out_ << "\n";
    }
  }
}

void CompareConsoleReporter::all(const std::vector<ComparePoint>& points) {
  phase_tables(points);
  throughput_table(points);
  configuration_table(points);
  memory_table(points);
  compression_table(points);
}

}  // namespace dtbench::report
