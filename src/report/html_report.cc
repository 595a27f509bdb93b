#include "report/html_report.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "report/gantt_chart.h"
#include "report/project_figures.h"
#include "report/json_io.h"
#include "report/svg_chart.h"
#include "stats/stats.h"

namespace dtbench::report {

std::string file_basename(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return out;
}

namespace {

// The host name in a report's env, "?" when absent or malformed.
std::string host_name(const Json& env) {
  if (!env.contains("host") || !env.at("host").is_object()) return "?";
  const auto& h = env.at("host");
  return h.contains("hostname") && h.at("hostname").is_string() ? h.at("hostname").get<std::string>()
                                                                 : "?";
}

struct Labeled {
  const ReportSource* src;
  const ComparePoint* p;
};

// Series name of a point: strategy, plus bucket size and file when those vary.
struct Namer {
  bool buckets_vary = false, sources_vary = false;
  std::string operator()(const Labeled& l) const {
    std::string s = l.p->key.strategy();
    if (buckets_vary && l.p->key.reducer != "none")
      s += fmt::format(" {:g}MB", l.p->key.bucket_cap_mb);
    if (sources_vary) s += " [" + file_basename(l.src->path) + "]";
    return s;
  }
};

std::vector<std::string> models_of(const std::vector<ReportSource>& sources) {
  std::vector<std::string> out;
  for (const auto& s : sources)
    for (const auto& p : s.points)
      if (std::find(out.begin(), out.end(), p.key.model) == out.end()) out.push_back(p.key.model);
  return out;
}

void add_model_figures(std::vector<Figure>& figs, const std::vector<ReportSource>& sources,
                       const std::string& model) {
  std::vector<Labeled> pts;
  std::set<double> buckets;
  std::set<const ReportSource*> srcs;
  for (const auto& s : sources)
    for (const auto& p : s.points)
      if (p.key.model == model) {
        pts.push_back({&s, &p});
        if (p.key.reducer != "none") buckets.insert(p.key.bucket_cap_mb);
        srcs.insert(&s);
      }
  Namer name{buckets.size() > 1, srcs.size() > 1};

  // Throughput and efficiency vs ranks, one series per strategy.
  LineChart thr{fmt::format("{}: throughput vs ranks", model), "ranks", "examples/s (all ranks)",
                false, false, {}};
  LineChart eff{fmt::format("{}: scaling efficiency vs ranks", model), "ranks",
                "efficiency (% of ranks × 1-rank throughput)", false, false, {}};
  std::map<std::string, std::size_t> thr_index, eff_index;
  for (const auto* src : srcs) {
    // Rows line up with src->points; efficiency only pairs points of one model.
    const auto rows = throughput_rows(src->points);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].key.model != model) continue;
      const std::string n = name({src, &src->points[i]});
      if (!thr_index.count(n)) {
        thr_index[n] = thr.series.size();
        thr.series.push_back({n, {}, {}, {}});
      }
      auto& ts = thr.series[thr_index[n]];
      ts.x.push_back(rows[i].key.world_size);
      ts.y.push_back(rows[i].total);
      ts.err.push_back(rows[i].per_rank.half_width * rows[i].key.world_size);
      if (rows[i].efficiency) {
        if (!eff_index.count(n)) {
          eff_index[n] = eff.series.size();
          eff.series.push_back({n, {}, {}, {}});
        }
        auto& es = eff.series[eff_index[n]];
        es.x.push_back(rows[i].key.world_size);
        es.y.push_back(*rows[i].efficiency * 100);
      }
    }
  }
  figs.push_back({"throughput-" + slug(model),
                  "Total examples/s per strategy and world size; error bars: ±1.96σ over "
                  "iterations (times ranks).",
                  render_svg(thr)});
  figs.push_back({"efficiency-" + slug(model),
                  "Throughput at N ranks ÷ (N × throughput of the same strategy at 1 rank).",
                  render_svg(eff)});

  // Iteration-time percentiles and phase breakdown, one bar group per point.
  BarChart pct{fmt::format("{}: iteration time percentiles", model), "ms per iteration", {}, {}, false};
  // On a GPU the host clock sees launches, not work: the phases come from the
  // CUDA events when every point recorded them (as compare's tables).
  bool device = !pts.empty();
  for (const auto& l : pts) device = device && has_device_phases(l.p->run);
  BarChart phases{fmt::format("{}: phase breakdown (mean{})", model, device ? ", GPU time by CUDA events" : ""),
                  "ms per iteration", {}, {}, true};
  pct.series = {{"p50", {}}, {"p90", {}}, {"p99", {}}};
  phases.series = {{"forward", {}}, {"backward", {}}, {"exposed comm", {}}, {"optimizer", {}}};
  for (const auto& l : pts) {
    const std::string cat = fmt::format("{} {}R", name(l), l.p->key.world_size);
    pct.categories.push_back(cat);
    const auto s = stats::summarize(slowest_rank_times(l.p->run));
    pct.series[0].values.push_back(s.p50 * 1e3);
    pct.series[1].values.push_back(s.p90 * 1e3);
    pct.series[2].values.push_back(s.p99 * 1e3);
    phases.categories.push_back(cat);
    const char* keys[] = {"forward", "backward", "comm_wait", "optimizer"};
    for (int k = 0; k < 4; ++k)
      phases.series[k].values.push_back(
          stats::mean(device ? device_phase_times(l.p->run, keys[k]) : phase_times(l.p->run, keys[k])) * 1e3);
  }
  figs.push_back({"percentiles-" + slug(model),
                  "p50 / p90 / p99 of the iteration time (slowest rank per iteration).",
                  render_svg(pct)});
  figs.push_back({"phases-" + slug(model),
                  device ? "Mean GPU time per phase by CUDA events (slowest rank per iteration): forward, "
                           "backward, communication still exposed after backward, optimizer."
                         : "Mean time per phase (slowest rank per iteration): forward, backward, "
                           "communication still exposed after backward, optimizer.",
                  render_svg(phases)});

  // Time against memory: the trade between replicated and sharded strategies.
  // One line per strategy through its world sizes (ascending), a point per run
  // that recorded its peak tensor bytes.
  {
    LineChart mem{fmt::format("{}: iteration time vs peak memory per rank", model),
                  "peak tensor memory per rank (MiB)", "p50 ms per iteration", false, false, {}};
    std::map<std::string, std::vector<std::pair<double, double>>> by_series;  // x, y by world size
    std::map<std::string, std::vector<int>> ranks_of;
    std::vector<std::string> order;
    for (const auto& l : pts) {
      if (l.p->run.peak_bytes < 0) continue;
      const std::string n = name(l);
      if (!by_series.count(n)) order.push_back(n);
      by_series[n].push_back({static_cast<double>(l.p->run.peak_bytes) / (1 << 20),
                              stats::percentile(slowest_rank_times(l.p->run), 50) * 1e3});
      ranks_of[n].push_back(l.p->key.world_size);
    }
    for (const auto& n : order) {
      std::vector<std::size_t> idx(by_series[n].size());
      for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return ranks_of[n][a] < ranks_of[n][b]; });
      LineSeries ls{n, {}, {}, {}};
      for (std::size_t i : idx) {
        ls.x.push_back(by_series[n][i].first);
        ls.y.push_back(by_series[n][i].second);
      }
      mem.series.push_back(std::move(ls));
    }
    if (!mem.series.empty())
      figs.push_back({"memory-" + slug(model),
                      "p50 iteration time against the peak tensor bytes per rank (LibTorch's allocator over "
                      "the timed iterations, the largest rank), one line per strategy through its world "
                      "sizes in ascending order: further left needs less memory, lower is faster.",
                      render_svg(mem)});
  }

  // Bucket-size sweep: p50 iteration time vs bucket size per strategy and ranks.
  if (buckets.size() > 1) {
    LineChart sweep{fmt::format("{}: bucket-size sweep", model), "bucket capacity (MiB)",
                    "p50 ms per iteration", true, false, {}};
    std::map<std::string, std::size_t> index;
    for (const auto& l : pts) {
      if (l.p->key.reducer == "none") continue;
      Namer by_strategy{false, name.sources_vary};
      const std::string n = fmt::format("{} {}R", by_strategy(l), l.p->key.world_size);
      if (!index.count(n)) {
        index[n] = sweep.series.size();
        sweep.series.push_back({n, {}, {}, {}});
      }
      auto& s = sweep.series[index[n]];
      s.x.push_back(l.p->key.bucket_cap_mb);
      s.y.push_back(stats::percentile(slowest_rank_times(l.p->run), 50) * 1e3);
    }
    figs.push_back({"buckets-" + slug(model),
                    "p50 iteration time against --bucket-cap-mb, per strategy and world size.",
                    render_svg(sweep)});
  }
}

void add_comm_figures(std::vector<Figure>& figs, const std::vector<ReportSource>& sources) {
  std::vector<std::string> collectives;
  for (const auto& s : sources)
    for (const auto& r : s.comm)
      if (std::find(collectives.begin(), collectives.end(), r.collective) == collectives.end())
        collectives.push_back(r.collective);
  std::size_t comm_sources = 0;
  for (const auto& s : sources) comm_sources += s.comm.empty() ? 0 : 1;
  for (const auto& coll : collectives) {
    LineChart c{fmt::format("{}: bus bandwidth vs message size", coll), "message size",
                "busbw (GB/s, 1 GB = 1e9 B)", true, true, {}};
    for (const auto& s : sources) {
      LineSeries ser;
      for (const auto& r : s.comm) {
        if (r.collective != coll || r.placement != "out_of_place") continue;
        ser.x.push_back(static_cast<double>(r.bytes));
        ser.y.push_back(r.busbw_gbs);
      }
      if (ser.x.empty()) continue;
      ser.name = fmt::format("{} {}R", s.comm.front().backend, s.comm.front().world_size);
      if (comm_sources > 1) ser.name += " [" + file_basename(s.path) + "]";
      c.series.push_back(std::move(ser));
    }
    figs.push_back({"busbw-" + slug(coll),
                    "Out-of-place bus bandwidth (nccl-tests definition) per backend.",
                    render_svg(c)});
  }
}

void flatten(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array() && !j.empty() && (j.front().is_object() || j.front().is_array())) {
    for (std::size_t i = 0; i < j.size(); ++i) flatten(j[i], fmt::format("{}[{}]", prefix, i), out);
  } else {
    out.emplace_back(prefix, j.is_string() ? j.get<std::string>() : j.dump());
  }
}

std::string kv_table(const Json& j) {
  std::vector<std::pair<std::string, std::string>> rows;
  flatten(j, "", rows);
  std::string s = "<table class=\"kv\">\n";
  for (const auto& [k, v] : rows)
    s += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", html_escape(k), html_escape(v));
  return s + "</table>\n";
}

constexpr const char* kStyle = R"(body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
figure{margin:16px 0}figcaption{font-size:13px;color:#555}
svg.chart{font-size:11px;background:#fff}svg.chart .title{font-size:14px;font-weight:bold}
table.kv{border-collapse:collapse;font-size:12px}table.kv th{text-align:left;padding:1px 12px 1px 0;color:#555;font-weight:normal}
details{margin:8px 0}#render-warning{display:none;color:#b00;font-weight:bold})";

// Runs in the viewer: measures each chart's plotted marks and flags empty
// ones on the page (and in data- attributes a headless browser can read).
constexpr const char* kScript = R"(<script>
(function(){var bad=0;document.querySelectorAll('svg.chart').forEach(function(svg){
var g=svg.querySelector('g.plot');var b=g?g.getBBox():{width:0,height:0};
svg.setAttribute('data-plot-width',b.width.toFixed(1));svg.setAttribute('data-plot-height',b.height.toFixed(1));
svg.setAttribute('data-marks',g?g.children.length:0);if(!(b.width>0&&b.height>0))bad++;});
document.body.setAttribute('data-charts',document.querySelectorAll('svg.chart').length);
document.body.setAttribute('data-empty-charts',bad);
if(bad){var w=document.getElementById('render-warning');w.style.display='block';w.textContent=bad+' chart(s) have nothing plotted';}})();
</script>)";

// --trace: overlap % per strategy and bucket size (points with a trace and
// more than one rank), and a Gantt chart of one iteration per trace file.
void add_trace_figures(std::vector<Figure>& figs, const std::vector<ReportSource>& sources) {
  std::vector<std::string> buckets, strategies;
  std::map<std::pair<std::string, std::string>, double> overlap;
  for (const auto& s : sources)
    for (const auto& p : s.points) {
      if (p.key.world_size < 2 || !p.extras.contains("trace") || !p.extras.at("trace").is_object()) continue;
      const auto b = fmt::format("{:g} MB", p.key.bucket_cap_mb);
      const auto st = fmt::format("{} {}R", p.key.strategy(), p.key.world_size);
      if (std::find(buckets.begin(), buckets.end(), b) == buckets.end()) buckets.push_back(b);
      if (std::find(strategies.begin(), strategies.end(), st) == strategies.end()) strategies.push_back(st);
      overlap[{st, b}] = 100 * json_value_or<double>(p.extras.at("trace"), "overlap", 0.0, s.path + " extras.trace");
    }
  if (!strategies.empty()) {
    BarChart c{"Communication hidden behind computation (--trace)", "overlap (%)", buckets, {}, false};
    for (const auto& st : strategies) {
      BarSeries ser{st, {}};
      for (const auto& b : buckets) ser.values.push_back(overlap.count({st, b}) ? overlap[{st, b}] : 0.0);
      c.series.push_back(std::move(ser));
    }
    figs.push_back({"overlap", "Overlap = time(communication ∩ computation) / time(communication) on merged intervals, per strategy and bucket size (docs/metrics.md).",
                    render_svg(c)});
  }
  for (const auto& s : sources) {
    if (s.kind != "trace") continue;
    figs.push_back({"gantt-" + slug(file_basename(s.path)),
                    "One iteration of " + file_basename(s.path) + ": per rank the training thread's phases "
                    "and each bucket's collective from launch to completion (clock-aligned to rank 0).",
                    render_svg(gantt_from_trace(s.trace, file_basename(s.path)))});
  }
}

}  // namespace

std::vector<Figure> build_figures(const std::vector<ReportSource>& sources) {
  std::vector<Figure> figs;
  for (const auto& m : models_of(sources)) add_model_figures(figs, sources, m);
  add_comm_figures(figs, sources);
  add_trace_figures(figs, sources);
  add_project_figures(figs, sources);
  return figs;
}


void write_html(std::ostream& out, const std::vector<ReportSource>& sources,
                const std::string& title) {
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>"
      << html_escape(title) << "</title>\n<style>" << kStyle << "</style></head>\n<body>\n";
  out << "<h1>" << html_escape(title) << "</h1>\n<p id=\"render-warning\"></p>\n";
  out << "<p>Sources:</p><ul>\n";
  for (const auto& s : sources)
    if (s.kind == "trace")
      out << fmt::format("<li><code>{}</code> (trace, {} events)</li>\n", html_escape(s.path),
                         s.trace.at("traceEvents").size());
    else if (s.kind == "project")
      out << fmt::format("<li><code>{}</code> (projection, {} rank count(s))</li>\n", html_escape(s.path),
                         s.projection.size());
    else
      out << fmt::format("<li><code>{}</code> ({}, {} run(s), {} comm row(s)){}</li>\n",
                       html_escape(s.path), s.kind, s.points.size(), s.comm.size(),
                       s.env.contains("host") ? " on " + html_escape(host_name(s.env)) : "");
  out << "</ul>\n";
  out << "<h2>Charts</h2>\n";
  for (const auto& f : build_figures(sources))
    out << "<figure id=\"" << f.id << "\">\n" << f.svg << "<figcaption>" << html_escape(f.caption)
        << "</figcaption></figure>\n";
  for (const auto& s : sources) {
    if (s.kind == "trace" || s.kind == "project") continue;
    out << "<h2>Environment and configuration: " << html_escape(file_basename(s.path)) << "</h2>\n";
    out << "<details open><summary>environment</summary>\n" << kv_table(s.env) << "</details>\n";
    out << "<details open><summary>configuration</summary>\n" << kv_table(s.config) << "</details>\n";
  }
  out << kScript << "\n</body></html>\n";
}

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
      row(s, nullptr, &c, "time_us", "mean", c.time_us);
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
