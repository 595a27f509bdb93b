#pragma once
// A job's traces as a table (stdout) and JSON (schema dtbench.job_trace,
// docs/metrics.md "Your own job").
#include <ostream>

#include "job/job_summary.h"
#include "job/job_trace.h"
#include "report/json_io.h"

namespace dtbench::job {

void write_job_text(std::ostream& os, const JobTrace& job, const JobSummary& s);
report::Json job_json(const JobTrace& job, const JobSummary& s);

}  // namespace dtbench::job
