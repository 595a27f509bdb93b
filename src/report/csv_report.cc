#include "report/csv_report.h"

#include <fmt/format.h>

#include "report/json_io.h"
#include "stats/stats.h"

namespace dtbench::report {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void write_csv(std::ostream& out, const std::vector<ReportSource>& sources) {
  out << "source,kind,model,strategy,reducer,compression,bucket_cap_mb,world_size,collective,"
         "backend,placement,bytes,metric,stat,value\n";
  auto row = [&](const ReportSource& s, const PointKey* k, const CommRow* c, const std::string& metric,
                 const std::string& stat, double value) {
    out << csv_field(s.path) << ',' << s.kind << ',';
    if (k != nullptr)
      out << csv_field(k->model) << ',' << csv_field(k->strategy()) << ',' << k->reducer << ','
          << k->compression << ',' << fmt::format("{:g}", k->bucket_cap_mb) << ',' << k->world_size
          << ",,,,,";
    else
      out << ",,,,," << c->world_size << ',' << c->collective << ',' << c->backend << ','
          << c->placement << ',' << c->bytes << ',';
    out << metric << ',' << stat << ',' << fmt::format("{:.9g}", value) << '\n';
  };
  for (const auto& s : sources) {
    const auto thr = throughput_rows(s.points);
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const auto& p = s.points[i];
      const auto& k = p.key;
      for (const char* ph : {"forward", "backward", "comm_wait", "optimizer", "total"}) {
        const auto sm = stats::summarize(phase_times(p.run, ph));
        const std::string metric = std::string(ph) + "_s";
        for (const auto& [stat, v] : {std::pair<const char*, double>{"mean", sm.mean},
                                      {"p50", sm.p50}, {"p90", sm.p90}, {"p95", sm.p95},
                                      {"p99", sm.p99}})
          row(s, &k, nullptr, metric, stat, v);
        if (has_device_phases(p.run)) {  // the same phases by CUDA events (GPU runs)
          const auto dm = stats::summarize(device_phase_times(p.run, ph));
          for (const auto& [stat, v] : {std::pair<const char*, double>{"mean", dm.mean},
                                        {"p50", dm.p50}, {"p90", dm.p90}, {"p95", dm.p95},
                                        {"p99", dm.p99}})
            row(s, &k, nullptr, std::string(ph) + "_device_s", stat, v);
        }
      }
      row(s, &k, nullptr, "examples_per_s_per_rank", "mean", thr[i].per_rank.mean);
      row(s, &k, nullptr, "examples_per_s_per_rank", "ci196_half_width", thr[i].per_rank.half_width);
      row(s, &k, nullptr, "examples_per_s_total", "value", thr[i].total);
      if (thr[i].efficiency) row(s, &k, nullptr, "scaling_efficiency", "value", *thr[i].efficiency);
      if (p.run.peak_bytes >= 0) row(s, &k, nullptr, "peak_bytes", "max_rank", static_cast<double>(p.run.peak_bytes));
      if (p.run.peak_rss_bytes >= 0)
        row(s, &k, nullptr, "peak_rss_bytes", "max_rank", static_cast<double>(p.run.peak_rss_bytes));
      if (p.run.model_state_bytes >= 0)
        row(s, &k, nullptr, "model_state_bytes", "value", static_cast<double>(p.run.model_state_bytes));
      if (p.extras.contains("trace") && p.extras.at("trace").is_object()) {
        const auto& t = p.extras.at("trace");
        const std::string where = s.path + " extras.trace";
        row(s, &k, nullptr, "trace_overlap", "value", json_value_or<double>(t, "overlap", 0.0, where));
        row(s, &k, nullptr, "trace_exposed_comm_s", "p50",
            json_value_or<double>(t, "exposed_comm_ms_p50", 0.0, where) / 1000);
        row(s, &k, nullptr, "trace_compute_s", "p50", json_value_or<double>(t, "compute_ms_p50", 0.0, where) / 1000);
        row(s, &k, nullptr, "trace_idle_s", "p50", json_value_or<double>(t, "idle_ms_p50", 0.0, where) / 1000);
      }
      if (p.extras.contains("compression")) {
        const auto& c = p.extras.at("compression");
        const std::string where = s.path + " extras.compression";
        row(s, &k, nullptr, "compression_max_rel_error", "value",
            json_value_or<double>(c, "max_rel_error", 0.0, where));
        row(s, &k, nullptr, "compression_rel_l2_error", "value",
            json_value_or<double>(c, "rel_l2_error", 0.0, where));
        row(s, &k, nullptr, "compression_overflows", "value",
            json_value_or<double>(c, "overflows", 0.0, where));
      }
    }
    for (const auto& c : s.comm) {
      row(s, nullptr, &c, "time_us", c.time_stat, c.time_us);
      row(s, nullptr, &c, "algbw_gbs", "value", c.algbw_gbs);
      row(s, nullptr, &c, "busbw_gbs", "value", c.busbw_gbs);
    }
    for (const auto& p : s.projection) {
      auto prow = [&](const char* metric, const char* stat, double v) {
        out << csv_field(s.path) << ",project," << csv_field(s.projection_model) << ",,,,," << p.world_size
            << ",,,,," << metric << ',' << stat << ',' << fmt::format("{:.9g}", v) << '\n';
      };
      prow("iteration_s", "projected", p.iteration_s);
      prow("exposed_comm_s", "projected", p.exposed_comm_s);
      prow("scaling_efficiency", "projected", p.efficiency);
      if (p.has_measured) prow("iteration_s", "p50", p.measured_s);
    }
  }
}

}  // namespace dtbench::report
