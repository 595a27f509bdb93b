#pragma once
// One iteration of a --trace timeline as a Gantt chart (inline SVG): per
// rank a compute row (the training thread's phases) and a communication row
// (each bucket's collective, launch to completion, in as many lanes as
// overlap). Pure: the trace JSON in, SVG text out.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtbench::report {

struct GanttBar {
  double begin = 0, end = 0;  // µs from the chart's origin
  std::string name;           // tooltip
  int kind = 0;               // colour / legend index
};

struct GanttRow {
  std::string label;
  std::vector<GanttBar> bars;
};

struct GanttChart {
  std::string title;
  std::vector<std::string> kinds;  // legend names, by GanttBar::kind
  std::vector<GanttRow> rows;
};

// True for a Chrome trace written by dtbench --trace.
bool is_dtbench_trace(const nlohmann::ordered_json& doc);

// The first iteration of `trace` found on every rank (times from its start
// on the earliest rank). A chart without rows when the trace has none.
GanttChart gantt_from_trace(const nlohmann::ordered_json& trace, const std::string& name);

// <svg class="chart"> with the bars inside <g class="plot">.
std::string render_svg(const GanttChart& chart);

}  // namespace dtbench::report
