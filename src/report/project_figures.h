#pragma once
// The charts of `dtbench project` reports for `dtbench report`: per report,
// iteration time (with the measured points), scaling efficiency, examples/s
// per rank and memory per rank against the rank count, one line per
// strategy, the --memory-per-rank limit drawn across the memory chart.
#include <vector>

#include "report/figures.h"
#include "report/report_data.h"

namespace dtbench::report {

void add_project_figures(std::vector<Figure>& figs, const std::vector<ReportSource>& sources);

}  // namespace dtbench::report
