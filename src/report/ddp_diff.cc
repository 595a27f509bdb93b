#include "report/ddp_diff.h"

#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"
#include "report/ddp_record.h"
#include "report/json_io.h"
#include "report/ddp_reporter.h"
#include "stats/stats.h"

namespace dtbench::report {
namespace {

using Json = nlohmann::ordered_json;

void flatten(const Json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else if (j.is_array()) {
    bool scalars = true;
    for (const auto& x : j) scalars = scalars && !x.is_structured();
    if (scalars) out[prefix] = j.dump();
  } else if (j.is_string()) {
    out[prefix] = j.get<std::string>();
  } else {
    out[prefix] = j.dump();
  }
}

std::map<std::string, std::string> keys_of(const Json& doc) {
  std::map<std::string, std::string> out;
  if (doc.contains("config")) flatten(doc.at("config"), "config", out);
  if (doc.contains("env")) flatten(doc.at("env"), "env", out);
  return out;
}

std::vector<DdpRun> runs_of(const Json& doc, const std::string& name) {
  std::vector<DdpRun> runs;
  const auto& rs = doc.at("runs");
  for (std::size_t i = 0; i < rs.size(); ++i)
    runs.push_back(ddp_run_from_json(rs[i], fmt::format("{}: runs[{}]", name, i)));
  return runs;
}

}  // namespace

namespace {

void check_shape(const Json& doc, const std::string& name) {
  if (!doc.is_object() || !doc.contains("schema") || !doc.at("schema").is_string())
    throw UsageError(fmt::format("{}: not a dtbench report (no 'schema' string)", name));
  const auto schema = doc.at("schema").get<std::string>();
  if (schema != "dtbench.ddp")
    throw UsageError(
        fmt::format("{}: schema '{}' is not a dtbench ddp report (dtbench.ddp)", name, schema));
  if (!doc.contains("schema_version") || !doc.at("schema_version").is_number_integer() ||
      doc.at("schema_version").get<long long>() < 1 || doc.at("schema_version").get<long long>() > 2)
    throw UsageError(fmt::format("{}: unsupported schema_version {} (this build reads 1 and 2)", name,
                                 doc.contains("schema_version") ? doc.at("schema_version").dump()
                                                                : "(missing)"));
  if (!doc.contains("config") || !doc.at("config").is_object() ||
      !doc.at("config").contains("model") || !doc.at("config").at("model").is_string())
    throw UsageError(fmt::format("{}: missing config.model", name));
  if (!doc.contains("runs") || !doc.at("runs").is_array())
    throw UsageError(fmt::format("{}: missing 'runs' array", name));
}

// The --trace analysis of rows traced in both reports: overlap and exposed
// communication beside each other (the times above say how much they cost).
void write_trace_diff(std::ostream& out, const Json& base, const Json& test) {
  auto traces = [](const Json& doc) {
    std::map<std::string, Json> m;
    for (const auto& r : doc.at("runs")) {
      if (!r.is_object() || !r.contains("extras") || !r.at("extras").is_object()) continue;
      const auto& e = r.at("extras");
      if (e.contains("trace") && e.at("trace").is_object())
        m[json_value_or<std::string>(r, "label", "?", "run")] = e.at("trace");
    }
    return m;
  };
  const auto a = traces(base), b = traces(test);
  bool header = false;
  for (const auto& [label, ta] : a) {
    const auto it = b.find(label);
    if (it == b.end()) continue;
    const auto& tb = it->second;
    if (!header) {
      out << "\nTraced rows (p50 per rank-iteration): overlap = share of communication hidden by "
             "computation\n";
      out << fmt::format("{:>10}  {:>12} {:>12}  {:>15} {:>15} {:>9}\n", "row", "base overlap",
                         "test overlap", "base exposed ms", "test exposed ms", "delta ms");
      header = true;
    }
    const double ea = json_value_or<double>(ta, "exposed_comm_ms_p50", 0.0, "base trace");
    const double eb = json_value_or<double>(tb, "exposed_comm_ms_p50", 0.0, "test trace");
    out << fmt::format("{:>10}  {:>11.0f}% {:>11.0f}%  {:>15.2f} {:>15.2f} {:>+9.2f}\n", label,
                       100 * json_value_or<double>(ta, "overlap", 0.0, "base trace"),
                       100 * json_value_or<double>(tb, "overlap", 0.0, "test trace"), ea, eb, eb - ea);
  }
}

}  // namespace

void check_ddp_report(const Json& doc, const std::string& name) {
  try {
    check_shape(doc, name);
    runs_of(doc, name);  // every run readable before anything is printed
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("{}: malformed report: {}", name, printable(e.what(), 200)));
  }
}

double time_diff_percent(double base_sec, double test_sec) {
  if (base_sec <= 0) throw std::invalid_argument("time_diff_percent: the base time must be positive");
  return -100.0 * (test_sec - base_sec) / base_sec;
}

double speedup_percent(double base_sec, double test_sec) {
  if (base_sec <= 0 || test_sec <= 0)
    throw std::invalid_argument("speedup_percent: times must be positive");
  return (base_sec / test_sec - 1.0) * 100.0;
}

std::vector<std::string> side_by_side(const Json& base, const Json& test) {
  const auto a = keys_of(base);
  const auto b = keys_of(test);
  std::map<std::string, std::pair<std::string, std::string>> all;
  for (const auto& [k, v] : a) all[k].first = v;
  for (const auto& [k, v] : b) all[k].second = v;
  std::vector<std::string> lines;
  for (const auto& [k, v] : all) {
    const std::string x = a.count(k) ? v.first : "(absent)";
    const std::string y = b.count(k) ? v.second : "(absent)";
    lines.push_back(fmt::format("{} {}: {} vs {}", x == y ? ' ' : '*', k, x, y));
  }
  return lines;
}

namespace {

// Rows recorded with memory figures in both reports: peak and model state
// per rank, MiB, and the peak's change (negative = test needs less).
void write_memory_diff(std::ostream& out, const std::vector<DdpRun>& runs_a,
                       const std::vector<DdpRun>& runs_b) {
  bool header = false;
  for (const auto& ra : runs_a)
    for (const auto& rb : runs_b) {
      if (rb.label != ra.label || rb.world_size != ra.world_size) continue;
      if (ra.peak_bytes < 0 || rb.peak_bytes < 0) continue;
      if (!header) {
        out << "\nMemory per rank, MiB (peak of tensors over the timed iterations; model state):\n";
        out << fmt::format("{:>10}  {:>10} {:>10}  {:>8}  {:>11} {:>11}\n", "row", "base peak", "test peak",
                           "delta%", "base state", "test state");
        header = true;
      }
      const double mib = 1048576.0;
      const std::string delta = ra.peak_bytes > 0
                                    ? fmt::format("{:>+7.1f}%", 100.0 * (rb.peak_bytes - ra.peak_bytes) / ra.peak_bytes)
                                    : std::string("n/a");
      out << fmt::format("{:>10}  {:>10.1f} {:>10.1f}  {:>8}  {:>11.1f} {:>11.1f}\n", ra.label,
                         ra.peak_bytes / mib, rb.peak_bytes / mib, delta, ra.model_state_bytes / mib,
                         rb.model_state_bytes / mib);
    }
}

}  // namespace

void write_ddp_diff(std::ostream& out, const Json& base, const Json& test,
                    const std::vector<double>& percentiles) {
  check_ddp_report(base, "base");
  check_ddp_report(test, "test");
  const auto model_a = base.at("config").at("model").get<std::string>();
  const auto model_b = test.at("config").at("model").get<std::string>();
  if (model_a != model_b)
    throw UsageError(fmt::format(
        "refusing to compare different models: base is {}, test is {}", model_a, model_b));
  const auto runs_a = runs_of(base, "base");
  const auto runs_b = runs_of(test, "test");

  out << "Configuration and environment (base vs test; * = differs):\n";
  for (const auto& line : side_by_side(base, test)) out << "  " << line << "\n";

  out << fmt::format(
      "\nModel: {}\n"
      "s/it and ex/s as diff.py: every rank's iterations pooled, examples/s per rank;\n"
      "diff = -(test - base) / base x 100 of s/it (diff.py's; positive = test faster);\n"
      "thru = base / test - 1 in percent (the throughput change); slowest = the slowest\n"
      "rank per iteration (the job's sec/iter)\n\n",
      model_a);
  out << fmt::format("{:>10} {:>5}  {:>10} {:>9}  {:>10} {:>9}  {:>8} {:>8}  {:>12} {:>12}\n", "row", "pct",
                     "base s/it", "base ex/s", "test s/it", "test ex/s", "diff", "thru", "base slowest",
                     "test slowest");
  int matched = 0;
  for (const auto& ra : runs_a) {
    const DdpRun* rb = nullptr;
    for (const auto& r : runs_b)
      if (r.label == ra.label && r.world_size == ra.world_size) rb = &r;
    if (rb == nullptr) {
      out << fmt::format("{:>10}  only in base\n", ra.label);
      continue;
    }
    if (rb->batch_per_rank != ra.batch_per_rank) {
      // diff.py skips benchmarks whose batch sizes differ: their times do
      // not compare.
      out << fmt::format("{:>10}  skipped: batch size per rank differs (base {}, test {})\n", ra.label,
                         ra.batch_per_rank, rb->batch_per_rank);
      continue;
    }
    if (rb->tp != ra.tp || rb->pp != ra.pp) {
      out << fmt::format("{:>10}  skipped: the layout differs (base tp {} pp {}, test tp {} pp {})\n", ra.label, ra.tp,
                         ra.pp, rb->tp, rb->pp);
      continue;
    }
    ++matched;
    const auto ta = pooled_times(ra), tb = pooled_times(*rb);
    const auto sa = slowest_rank_times(ra), sb = slowest_rank_times(*rb);
    for (double p : percentiles) {
      const double a = stats::percentile(ta, p);
      const double b = stats::percentile(tb, p);
      const double slow_a = stats::percentile(sa, p), slow_b = stats::percentile(sb, p);
      if (!(a > 0) || !(b > 0)) {  // a report of zero-time iterations: no rate to compare
        out << fmt::format("{:>10} {:>5}  {:>10.4f} {:>9}  {:>10.4f} {:>9}  {:>8} {:>8}  {:>12.4f} {:>12.4f}\n",
                           ra.label, percentile_name(p), a, "n/a", b, "n/a", "n/a", "n/a", slow_a, slow_b);
        continue;
      }
      // ex/s as diff.py's int(batch_size / vb).
      out << fmt::format(
          "{:>10} {:>5}  {:>10.4f} {:>9}  {:>10.4f} {:>9}  {:>+7.1f}% {:>+7.1f}%  {:>12.4f} {:>12.4f}\n",
          ra.label, percentile_name(p), a, static_cast<long long>(ra.examples_per_rank() / a), b,
          static_cast<long long>(rb->examples_per_rank() / b),
          time_diff_percent(a, b), speedup_percent(a, b), slow_a, slow_b);
    }
  }
  for (const auto& rb : runs_b) {
    bool found = false;
    for (const auto& ra : runs_a) found = found || (ra.label == rb.label && ra.world_size == rb.world_size);
    if (!found) out << fmt::format("{:>10}  only in test\n", rb.label);
  }
  if (matched == 0) out << "(no row appears in both reports with the same batch size)\n";
  write_memory_diff(out, runs_a, runs_b);
  write_trace_diff(out, base, test);
  out.flush();
}

}  // namespace dtbench::report
