#include "report/project_figures.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "report/svg_chart.h"

namespace dtbench::report {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// The report's rows by strategy, in the order the strategies first appear.
std::vector<std::pair<std::string, std::vector<const ProjectionPoint*>>> by_strategy(const ReportSource& s) {
  std::vector<std::pair<std::string, std::vector<const ProjectionPoint*>>> out;
  for (const auto& p : s.projection) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == p.strategy; });
    if (it == out.end()) {
      out.push_back({p.strategy, {}});
      it = out.end() - 1;
    }
    it->second.push_back(&p);
  }
  return out;
}

// A --search report: its layouts' tokens/s per rank and memory per rank,
// best first, as bars.
void add_search_figures(std::vector<Figure>& figs, const ReportSource& s) {
  const std::string what = (s.projection_model.empty() ? std::string("search") : s.projection_model) + " (" +
                           file_basename(s.path) + ")";
  std::vector<std::string> names;
  std::string key;
  BarSeries rate{"tokens/s per rank", {}}, mem{"GiB per rank", {}};
  for (const auto& p : s.projection) {
    names.push_back(p.layout_label);
    key += fmt::format("{}{}: {}", key.empty() ? "" : "; ", p.layout_label.substr(0, p.layout_label.find(' ')), p.layout);
    rate.values.push_back(p.tokens_per_s_per_rank);
    mem.values.push_back(p.memory_bytes / kGiB);
  }
  const std::string id = slug(file_basename(s.path));
  figs.push_back(chart_figure(
      "search-rate-" + id,
      fmt::format("`dtbench project --search` on {} ranks: the layouts that fit, best first, by projected tokens/s per "
                  "rank (docs/metrics.md \"Projection: layouts\"). {}.",
                  s.projection.front().world_size, key),
      render_svg(BarChart{what + ": the best layouts' tokens/s per rank", "tokens/s per rank", names, {rate}, false})));
  figs.push_back(chart_figure(
      "search-memory-" + id,
      fmt::format("Projected memory per rank of the same layouts, under the {:.1f} GiB limit.",
                  s.projection_memory_limit / kGiB),
      render_svg(BarChart{what + ": the best layouts' memory per rank", "GiB per rank", names, {mem}, false})));
}

}  // namespace

void add_project_figures(std::vector<Figure>& figs, const std::vector<ReportSource>& sources) {
  for (const auto& s : sources) {
    if (s.kind != "project" || s.projection.empty()) continue;
    if (s.projection_search) {
      add_search_figures(figs, s);
      continue;
    }
    const std::string what = (s.projection_model.empty() ? std::string("projection") : s.projection_model) + " (" +
                             file_basename(s.path) + ")";
    const auto groups = by_strategy(s);
    const bool several = groups.size() > 1;
    LineChart t{what + ": projected iteration time vs ranks", "ranks", "seconds per iteration (p50)", true, false, {}};
    LineChart e{what + ": projected scaling efficiency vs ranks", "ranks",
                "efficiency (% of the 1-rank iteration time)", true, false, {}};
    const bool tokens = s.projection.front().tokens_per_s_per_rank > 0;
    LineChart r{what + (tokens ? ": projected tokens/s per rank vs ranks" : ": projected examples/s per rank vs ranks"),
                "ranks", tokens ? "tokens/s per rank (GPU)" : "examples/s per rank", true, false, {}};
    LineChart m{what + ": projected memory per rank vs ranks", "ranks", "GiB per rank", true, false, {}};
    double lo = 0, hi = 0;
    for (const auto& [strategy, rows] : groups) {
      const std::string name = several ? strategy : std::string("projected");
      LineSeries proj{name, {}, {}, {}}, meas{(several ? strategy + " " : std::string()) + "measured", {}, {}, {}},
          eff{name, {}, {}, {}}, rate{name, {}, {}, {}}, mem{name, {}, {}, {}};
      for (const auto* p : rows) {
        const double x = p->world_size;
        lo = lo == 0 ? x : std::min(lo, x);
        hi = std::max(hi, x);
        proj.x.push_back(x);
        proj.y.push_back(p->iteration_s);
        eff.x.push_back(x);
        eff.y.push_back(100 * p->efficiency);
        rate.x.push_back(x);
        rate.y.push_back(tokens ? p->tokens_per_s_per_rank : p->examples_per_s / x);
        if (p->memory_bytes >= 0) {
          mem.x.push_back(x);
          mem.y.push_back(p->memory_bytes / kGiB);
        }
        if (p->has_measured) {
          meas.x.push_back(x);
          meas.y.push_back(p->measured_s);
        }
      }
      t.series.push_back(std::move(proj));
      if (!meas.x.empty()) t.series.push_back(std::move(meas));
      e.series.push_back(std::move(eff));
      r.series.push_back(std::move(rate));
      if (!mem.x.empty()) m.series.push_back(std::move(mem));
    }
    const std::string id = slug(file_basename(s.path));
    figs.push_back(chart_figure("project-time-" + id,
                    "`dtbench project`: DDP's iteration = forward + max(backward, last bucket's allreduce done) + "
                    "optimizer + DDP's fixed cost; the sharded strategies' as docs/metrics.md \"Projection: sharded "
                    "strategies\"; measured points from the same or --measured reports.",
                    render_svg(t)));
    figs.push_back(chart_figure("project-efficiency-" + id,
                    "Projected weak-scaling efficiency = iteration(1 rank) / iteration(N).", render_svg(e)));
    if (!several && m.series.empty()) continue;  // a DDP-only report from before the memory figures
    figs.push_back(chart_figure("project-rate-" + id,
                    "Projected throughput per rank (tokens/s for token models, else examples/s), one line per "
                    "strategy.",
                    render_svg(r)));
    if (m.series.empty()) continue;
    if (s.projection_memory_limit > 0)
      m.series.push_back({"memory limit", {lo, hi}, {s.projection_memory_limit / kGiB, s.projection_memory_limit / kGiB}, {}});
    figs.push_back(chart_figure("project-memory-" + id,
                    "Projected memory per rank: model states + gathered units + buffers + activations (where "
                    "known), one line per strategy; the --memory-per-rank limit across.",
                    render_svg(m)));
  }
}

}  // namespace dtbench::report
