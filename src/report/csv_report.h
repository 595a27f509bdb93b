#pragma once
// `dtbench report --csv`: the same data as the HTML page, one value per row.
#include <ostream>
#include <string>
#include <vector>

#include "report/report_data.h"

namespace dtbench::report {

// Tidy CSV, one value per row:
// source,kind,model,strategy,reducer,compression,bucket_cap_mb,world_size,
// collective,backend,placement,bytes,metric,stat,value
void write_csv(std::ostream& out, const std::vector<ReportSource>& sources);

// RFC 4180 quoting of one CSV field.
std::string csv_field(const std::string& s);

}  // namespace dtbench::report
