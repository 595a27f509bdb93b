#pragma once
// What the runs found, for the top of `dtbench report`'s page: a few
// sentences and key figures read from the sources alone — per model the
// fastest strategy at the widest world size, its scaling efficiency and the
// memory per rank there; per collective the peak bus bandwidth, whether the
// sweep reached it, and its share of a stated ceiling; per projection the
// efficiency at the largest rank count. Pure.
#include <string>
#include <vector>

#include "report/report_data.h"

namespace dtbench::report {

struct KeyFigure {
  std::string label;  // "mlp: fastest at 2 ranks"
  std::string value;  // "overlap"
  std::string note;   // "1,234 examples/s"
};

struct Findings {
  std::vector<std::string> sentences;
  std::vector<KeyFigure> figures;
};

struct FindingsOptions {
  // A link's bandwidth to compare busbw against, GB/s (1e9 B/s); 0: none given.
  double busbw_ceiling_gbs = 0;
};

Findings find_findings(const std::vector<ReportSource>& sources, const FindingsOptions& options = {});

}  // namespace dtbench::report
