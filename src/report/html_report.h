#pragma once
// `dtbench report`: one self-contained HTML page (inline SVG and CSS, no
// network) from comm, ddp and compare reports, and the same data as tidy CSV.
#include <ostream>
#include <string>
#include <vector>

#include "report/report_data.h"

namespace dtbench::report {

// A path's last component; a string with every character but letters and
// digits made '-' (figure anchors).
std::string file_basename(const std::string& path);
std::string slug(const std::string& s);

struct Figure {
  std::string id;       // stable anchor, e.g. "throughput-resnet50"
  std::string caption;
  std::string svg;
};

// The charts for these sources, in page order: per model throughput and
// scaling efficiency vs ranks, iteration-time percentiles, phase breakdown,
// bucket-size sweep (when several sizes); per collective busbw vs size.
std::vector<Figure> build_figures(const std::vector<ReportSource>& sources);

// The whole page.
void write_html(std::ostream& out, const std::vector<ReportSource>& sources,
                const std::string& title);

// Tidy CSV, one value per row:
// source,kind,model,strategy,reducer,compression,bucket_cap_mb,world_size,
// collective,backend,placement,bytes,metric,stat,value
void write_csv(std::ostream& out, const std::vector<ReportSource>& sources);

// RFC 4180 quoting of one CSV field.
std::string csv_field(const std::string& s);

}  // namespace dtbench::report
