#pragma once
// `dtbench report`: one self-contained HTML page (inline SVG and CSS, no
// network) from comm, ddp, compare, trace and project reports. It opens with
// what the runs found (report/findings.h), then the charts (report/figures.h;
// a chart with nothing to draw is left out with one line saying why), the
// sources, and each report's environment and configuration.
#include <ostream>
#include <string>
#include <vector>

#include "report/findings.h"
#include "report/report_data.h"

namespace dtbench::report {

void write_html(std::ostream& out, const std::vector<ReportSource>& sources, const std::string& title,
                const FindingsOptions& options = {});

}  // namespace dtbench::report
