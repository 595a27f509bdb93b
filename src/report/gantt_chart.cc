#include "report/gantt_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "report/svg_chart.h"

namespace dtbench::report {
namespace {

using Json = nlohmann::ordered_json;

constexpr double kWidth = 900, kLeft = 150, kRight = 170, kTop = 36, kBottom = 46;
constexpr double kLane = 16, kRowGap = 6;
const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#7f7f7f", "#2ca02c", "#9467bd",
                               "#d62728", "#e377c2", "#17becf", "#bcbd22"};
const char* const kKinds[] = {"forward",          "backward",       "comm wait",  "optimizer",
                              "buffer broadcast", "injected delay", "compression cast", "collective",
                              "all-gather"};

int kind_of_phase(const std::string& name) {
  for (int i = 0; i < 6; ++i)
    if (name == kKinds[i]) return i;
  return -1;
}

double num(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

int iteration_of(const Json& e) {
  const auto a = e.find("args");
  if (a == e.end() || !a->is_object()) return -1;
  const auto it = a->find("iteration");
  return it != a->end() && it->is_number_integer() ? it->get<int>() : -1;
}

// Lanes for possibly overlapping bars: each bar goes to the first lane free
// at its start. Returns the lane of each bar and the lane count.
std::vector<int> assign_lanes(const std::vector<GanttBar>& bars, int* lanes) {
  std::vector<std::size_t> order(bars.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return bars[a].begin < bars[b].begin; });
  std::vector<double> lane_end;
  std::vector<int> lane(bars.size(), 0);
  for (auto i : order) {
    std::size_t l = 0;
    while (l < lane_end.size() && lane_end[l] > bars[i].begin) ++l;
    if (l == lane_end.size()) lane_end.push_back(0);
    lane_end[l] = bars[i].end;
    lane[i] = static_cast<int>(l);
  }
  *lanes = std::max<int>(1, static_cast<int>(lane_end.size()));
  return lane;
}

}  // namespace

bool is_dtbench_trace(const Json& doc) {
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc.at("traceEvents").is_array()) return false;
  const auto o = doc.find("otherData");
  return o != doc.end() && o->is_object() && o->contains("generator") && o->at("generator") == "dtbench";
}

GanttChart gantt_from_trace(const Json& trace, const std::string& name) {
  GanttChart c;
  c.kinds.assign(std::begin(kKinds), std::end(kKinds));
  if (!is_dtbench_trace(trace)) return c;
  const auto& events = trace.at("traceEvents");
  // The first iteration every rank has.
  std::map<int, std::vector<int>> iterations;  // pid -> iterations
  std::map<int, std::string> names;
  for (const auto& e : events) {
    if (!e.is_object() || !e.contains("pid") || !e.at("pid").is_number_integer()) continue;
    const int pid = e.at("pid").get<int>();
    const std::string ph = e.value("ph", "");
    if (ph == "M" && e.value("name", "") == "process_name" && e.contains("args") && e.at("args").is_object())
      names[pid] = e.at("args").value("name", "");
    if (ph == "X" && e.value("cat", "") == "phase") iterations[pid].push_back(iteration_of(e));
  }
  int chosen = -1;
  for (const auto& [pid, its] : iterations) {
    const int first = its.empty() ? -1 : *std::min_element(its.begin(), its.end());
    chosen = std::max(chosen, first);
  }
  if (chosen < 0) return c;
  c.title = fmt::format("{}: iteration {} on every rank", name, chosen);
  std::map<int, GanttRow> compute, comm;
  std::map<std::string, GanttBar> open;  // async id -> bar
  std::map<std::string, int> open_pid;
  double origin = std::numeric_limits<double>::infinity();
  for (const auto& e : events) {
    if (!e.is_object() || !e.contains("pid") || !e.at("pid").is_number_integer()) continue;
    const int pid = e.at("pid").get<int>();
    const std::string ph = e.value("ph", "");
    const std::string cat = e.value("cat", "");
    const double ts = num(e, "ts");
    if (ph == "X" && (cat == "phase" || cat == "compression") && iteration_of(e) == chosen) {
      const std::string n = e.value("name", "");
      const int kind = cat == "compression" ? 6 : kind_of_phase(n);
      if (kind < 0) continue;
      compute[pid].bars.push_back({ts, ts + num(e, "dur"), n, kind});
      origin = std::min(origin, ts);
    } else if (ph == "b" && (cat == "collective" || cat == "all-gather") && iteration_of(e) == chosen) {
      const std::string id = e.value("id", "");
      open[id] = {ts, ts, e.value("name", ""), cat == "all-gather" ? 8 : 7};
      open_pid[id] = pid;
    } else if (ph == "e" && (cat == "collective" || cat == "all-gather")) {
      const auto it = open.find(e.value("id", ""));
      if (it == open.end()) continue;
      it->second.end = ts;
      comm[open_pid[it->first]].bars.push_back(it->second);
      open.erase(it);
    }
  }
  for (auto& [pid, row] : compute) {
    const std::string label = names.count(pid) ? names[pid] : fmt::format("process {}", pid);
    row.label = label.substr(0, label.find(" (")) + " compute";
    c.rows.push_back(row);
    auto& k = comm[pid];
    k.label = label.substr(0, label.find(" (")) + " comm";
    c.rows.push_back(k);
  }
  for (auto& row : c.rows)
    for (auto& b : row.bars) {
      b.begin -= origin;
      b.end -= origin;
    }
  return c;
}

std::string render_svg(const GanttChart& c) {
  std::vector<int> lanes(c.rows.size(), 1);
  std::vector<std::vector<int>> lane_of(c.rows.size());
  double hi = 0;
  for (std::size_t r = 0; r < c.rows.size(); ++r) {
    lane_of[r] = assign_lanes(c.rows[r].bars, &lanes[r]);
    for (const auto& b : c.rows[r].bars) hi = std::max(hi, b.end);
  }
  double plot_h = 0;
  for (int l : lanes) plot_h += l * kLane + kRowGap;
  plot_h = std::max(plot_h, 40.0);
  const double height = kTop + plot_h + kBottom, plot_w = kWidth - kLeft - kRight;
  std::string s = fmt::format(
      "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0} {1}\" "
      "width=\"{0}\" height=\"{1}\" role=\"img\" aria-label=\"{2}\">\n",
      kWidth, height, html_escape(c.title));
  s += fmt::format("<text class=\"title\" x=\"{}\" y=\"20\" text-anchor=\"middle\">{}</text>\n",
                   kLeft + plot_w / 2, html_escape(c.title));
  s += fmt::format("<text class=\"xlabel\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">time from the "
                   "iteration's start on the earliest rank (ms)</text>\n",
                   kLeft + plot_w / 2, height - 10);
  if (c.rows.empty() || !(hi > 0))
    return s + fmt::format("<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no data</text>\n</svg>\n",
                           kLeft + plot_w / 2, kTop + plot_h / 2);
  const auto ticks = nice_ticks(0, hi / 1000);
  const double span = ticks.back() * 1000;
  auto px = [&](double us) { return kLeft + us / span * plot_w; };
  for (double t : ticks)
    s += fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#e5e5e5\"/>"
        "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
        px(t * 1000), kTop, kTop + plot_h, kTop + plot_h + 16, t);
  s += "<g class=\"plot\">\n";
  double y = kTop;
  for (std::size_t r = 0; r < c.rows.size(); ++r) {
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                     kLeft - 6, y + lanes[r] * kLane / 2 + 4, html_escape(c.rows[r].label));
    for (std::size_t i = 0; i < c.rows[r].bars.size(); ++i) {
      const auto& b = c.rows[r].bars[i];
      const double x0 = px(b.begin), x1 = std::max(px(b.end), x0 + 0.5);
      s += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" "
          "stroke=\"#fff\" stroke-width=\"0.3\"><title>{}: {:.3f} - {:.3f} ms</title></rect>\n",
          x0, y + lane_of[r][i] * kLane + 1, x1 - x0, kLane - 2,
          kColors[b.kind % (sizeof(kColors) / sizeof(*kColors))], html_escape(b.name), b.begin / 1000,
          b.end / 1000);
    }
    y += lanes[r] * kLane + kRowGap;
  }
  s += "</g>\n<g class=\"legend\">\n";
  for (std::size_t i = 0; i < c.kinds.size(); ++i)
    s += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"{:.1f}\">{}</text>\n",
        kLeft + plot_w + 12, kTop + 18.0 * i, kColors[i % (sizeof(kColors) / sizeof(*kColors))],
        kLeft + plot_w + 30, kTop + 18.0 * i + 10, html_escape(c.kinds[i]));
  return s + "</g>\n</svg>\n";
}

}  // namespace dtbench::report
