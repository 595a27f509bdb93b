#pragma once
// Charts drawn as inline SVG for the self-contained HTML report: line charts
// (optionally log-x, with error bars) and grouped or stacked bar charts, each
// with labelled axes (units in the labels) and a legend. Pure: strings in,
// SVG text out.
#include <string>
#include <vector>

namespace dtbench::report {

struct LineSeries {
  std::string name;
  std::vector<double> x, y;
  std::vector<double> err;  // optional ± half-widths, one per point
};

struct LineChart {
  std::string title, x_label, y_label;
  bool log_x = false;
  bool x_bytes = false;  // tick labels as byte sizes (1 KiB, 4 MiB)
  std::vector<LineSeries> series;
};

struct BarSeries {
  std::string name;
  std::vector<double> values;  // one per category
};

struct BarChart {
  std::string title, y_label;
  std::vector<std::string> categories;
  std::vector<BarSeries> series;
  bool stacked = false;
};

// A grid of cells, one per (row, column), coloured from white (the smallest
// value) to dark red (the largest), each cell's value on hover; a colour bar
// names both ends. For rank x message size: which rank, at which sizes.
struct HeatMap {
  std::string title, x_label, y_label;
  std::string value_label;  // after a value on hover ("us after the median rank")
  std::string unit;         // after the colour bar's two ends ("us")
  std::vector<std::string> columns;         // left to right
  std::vector<std::string> rows;            // top to bottom
  std::vector<std::vector<double>> values;  // [row][column]
};

// Escapes &, <, >, " and ' for HTML/SVG text and attributes.
std::string html_escape(const std::string& s);

// Tick positions for a linear axis over [lo, hi]: 1/2/5 × 10^k steps,
// covering the range, at most about `target` ticks.
std::vector<double> nice_ticks(double lo, double hi, int target = 6);

// Each chart is an <svg class="chart"> whose plotted marks are inside
// <g class="plot">; a chart without data says so in its body.
std::string render_svg(const LineChart& chart);
std::string render_svg(const BarChart& chart);
std::string render_svg(const HeatMap& chart);

}  // namespace dtbench::report
