#include "report/figures.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/units.h"
#include "report/gantt_chart.h"
#include "report/json_io.h"
#include "report/project_figures.h"
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
  figs.push_back(chart_figure("throughput-" + slug(model),
                  "Total examples/s per strategy and world size; error bars: ±1.96σ over "
                  "iterations (times ranks).",
                  render_svg(thr)));
  if (eff.series.empty())
    figs.push_back(omitted_figure("efficiency-" + slug(model), eff.title,
                    "no strategy has a 1-rank run to divide by (add 1 to --world-sizes)"));
  else
    figs.push_back(chart_figure("efficiency-" + slug(model),
                    "Throughput at N ranks ÷ (N × throughput of the same strategy at 1 rank).",
                    render_svg(eff)));

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
  figs.push_back(chart_figure("percentiles-" + slug(model),
                  "p50 / p90 / p99 of the iteration time (slowest rank per iteration).",
                  render_svg(pct)));
  figs.push_back(chart_figure("phases-" + slug(model),
                  device ? "Mean GPU time per phase by CUDA events (slowest rank per iteration): forward, "
                           "backward, communication still exposed after backward, optimizer."
                         : "Mean time per phase (slowest rank per iteration): forward, backward, "
                           "communication still exposed after backward, optimizer.",
                  render_svg(phases)));

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
    if (mem.series.empty())
      figs.push_back(omitted_figure("memory-" + slug(model), mem.title,
                      "no run recorded its peak tensor memory (reports from before dtbench measured it)"));
    else
      figs.push_back(chart_figure("memory-" + slug(model),
                      "p50 iteration time against the peak tensor bytes per rank (LibTorch's allocator over "
                      "the timed iterations, the largest rank), one line per strategy through its world "
                      "sizes in ascending order: further left needs less memory, lower is faster.",
                      render_svg(mem)));
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
    figs.push_back(chart_figure("buckets-" + slug(model),
                    "p50 iteration time against --bucket-cap-mb, per strategy and world size.",
                    render_svg(sweep)));
  }
}

// The rows of `coll` in `s`, one placement: out of place where measured,
// else in place (as the busbw chart picks), ascending in size.
// The first pass over the sweep (-N) and the first --split group only: the
// charts have one point per size.
std::vector<const CommRow*> placement_rows(const ReportSource& s, const std::string& coll) {
  for (const char* placement : {"out_of_place", "in_place"}) {
    std::vector<const CommRow*> rows;
    for (const auto& r : s.comm)
      if (r.collective == coll && r.placement == placement && r.cycle == 0 && r.group <= 0) rows.push_back(&r);
    if (!rows.empty()) return rows;
  }
  return {};
}

// Per collective: the latency distribution over sizes (mean and each
// percentile) and, per source with 2 or more ranks, a rank x size heat map
// of when each rank arrived after the median rank.
void add_comm_rank_figures(std::vector<Figure>& figs, const std::vector<ReportSource>& sources,
                           const std::string& coll, std::size_t comm_sources) {
  LineChart lat{fmt::format("{}: time per iteration vs message size", coll), "message size",
                "time (us), over every rank's every iteration", true, true, {}};
  std::size_t index = 0;
  for (const auto& s : sources) {
    if (s.comm.empty()) continue;
    ++index;
    const auto rows = placement_rows(s, coll);
    if (rows.empty()) continue;
    const std::string who = comm_sources > 1 ? fmt::format(" [{}]", file_basename(s.path)) : "";
    // The row's time is the ranks' mean unless -a chose another.
    const std::string stat = rows.front()->time_stat == "mean" ? "mean" : "time (" + rows.front()->time_stat + ")";
    LineSeries mean{stat + who, {}, {}, {}};
    std::vector<LineSeries> pct;
    for (const auto* r : rows) {
      mean.x.push_back(static_cast<double>(r->bytes));
      mean.y.push_back(r->time_us);
      for (const auto& [name, v] : r->percentiles_us) {
        auto it = std::find_if(pct.begin(), pct.end(), [&](const LineSeries& p) { return p.name == name + who; });
        if (it == pct.end()) {
          pct.push_back({name + who, {}, {}, {}});
          it = pct.end() - 1;
        }
        it->x.push_back(static_cast<double>(r->bytes));
        it->y.push_back(v);
      }
    }
    lat.series.push_back(std::move(mean));
    for (auto& p : pct) lat.series.push_back(std::move(p));
    const std::size_t ranks = rows.front()->lateness_us.size();
    bool all = ranks >= 2;
    for (const auto* r : rows) all = all && r->lateness_us.size() == ranks;
    if (!all) continue;
    HeatMap h{fmt::format("{}: when each rank arrived{}", coll, who), "message size", "rank",
              "us after the median rank", "us", {}, {}, {}};
    for (const auto* r : rows) h.columns.push_back(format_bytes(r->bytes));
    for (std::size_t k = 0; k < ranks; ++k) {
      h.rows.push_back(fmt::format("rank {}", k));
      h.values.emplace_back();
      for (const auto* r : rows) h.values.back().push_back(r->lateness_us[k]);
    }
    figs.push_back(chart_figure(fmt::format("arrival-{}{}", slug(coll), comm_sources > 1 ? fmt::format("-{}", index) : ""),
                                "Per rank and message size, the median over iterations of when the rank started an "
                                "iteration after the median rank did, on the job's common clock: a late rank is a "
                                "dark row (its own time is the shortest: the others waited for it).",
                                render_svg(h)));
  }
  if (!lat.series.empty())
    figs.push_back(chart_figure("latency-" + slug(coll),
                                "Mean and percentiles of every rank's every timed iteration, per message size: a "
                                "p99 far above the p50 is jitter or spikes, not bandwidth.",
                                render_svg(lat)));
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
      // Out of place where measured; in place where the backend has no
      // out-of-place form (c10d's allreduce) or only it was run.
      for (const char* placement : {"out_of_place", "in_place"}) {
        LineSeries ser;
        for (const auto& r : s.comm) {
          if (r.collective != coll || r.placement != placement || r.cycle != 0 || r.group > 0) continue;
          ser.x.push_back(static_cast<double>(r.bytes));
          ser.y.push_back(r.busbw_gbs);
        }
        if (ser.x.empty()) continue;
        ser.name = fmt::format("{} {}R", s.comm.front().backend, s.comm.front().world_size);
        if (std::string(placement) == "in_place") ser.name += " in-place";
        if (comm_sources > 1) ser.name += " [" + file_basename(s.path) + "]";
        c.series.push_back(std::move(ser));
        break;
      }
    }
    figs.push_back(chart_figure("busbw-" + slug(coll),
                    "Bus bandwidth (nccl-tests definition) per backend: out of place, or in place (so named) "
                    "where the backend has no out-of-place form or only that was run.",
                    render_svg(c)));
    add_comm_rank_figures(figs, sources, coll, comm_sources);
  }
}

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
    figs.push_back(chart_figure("overlap", "Overlap = time(communication ∩ computation) / time(communication) on merged intervals, per strategy and bucket size (docs/metrics.md).",
                    render_svg(c)));
  }
  for (const auto& s : sources) {
    if (s.kind != "trace") continue;
    figs.push_back(chart_figure("gantt-" + slug(file_basename(s.path)),
                    "One iteration of " + file_basename(s.path) + ": per rank the training thread's phases "
                    "and each bucket's collective from launch to completion (clock-aligned to rank 0).",
                    render_svg(gantt_from_trace(s.trace, file_basename(s.path)))));
  }
}

}  // namespace

Figure chart_figure(std::string id, std::string caption, std::string svg) {
  Figure f;
  f.id = std::move(id);
  f.caption = std::move(caption);
  f.svg = std::move(svg);
  return f;
}

Figure omitted_figure(std::string id, std::string title, std::string why) {
  Figure f;
  f.id = std::move(id);
  f.title = std::move(title);
  f.omitted = std::move(why);
  return f;
}

std::vector<Figure> build_figures(const std::vector<ReportSource>& sources) {
  std::vector<Figure> figs;
  for (const auto& m : models_of(sources)) add_model_figures(figs, sources, m);
  add_comm_figures(figs, sources);
  add_trace_figures(figs, sources);
  add_project_figures(figs, sources);
  return figs;
}

}  // namespace dtbench::report
