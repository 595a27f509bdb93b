#pragma once
// The charts of `dtbench report`, built from the sources it read: per model
// throughput and scaling efficiency against ranks, iteration-time
// percentiles, phase breakdown, time against memory, bucket-size sweep; per
// collective busbw against size; --trace overlap and Gantt charts; the
// projection's charts. Pure: sources in, SVG text out.
#include <string>
#include <vector>

#include "report/report_data.h"

namespace dtbench::report {

// A path's last component; a string with every character but letters and
// digits made '-' (figure anchors).
std::string file_basename(const std::string& path);
std::string slug(const std::string& s);

struct Figure {
  std::string id;  // stable anchor, e.g. "throughput-resnet50"
  std::string caption;
  std::string svg;
  // A chart with nothing to draw is left out: its title and why (svg empty).
  std::string title;
  std::string omitted;
};

// A drawn chart; a chart left out, with its title and why.
Figure chart_figure(std::string id, std::string caption, std::string svg);
Figure omitted_figure(std::string id, std::string title, std::string why);

// The charts for these sources, in page order.
std::vector<Figure> build_figures(const std::vector<ReportSource>& sources);

}  // namespace dtbench::report
