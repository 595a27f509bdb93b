#pragma once
// The console lines of a run's --trace analysis (the "trace" object of a
// ddp/compare record's extras; docs/metrics.md "Trace analysis").
#include <ostream>

#include <nlohmann/json.hpp>

namespace dtbench::report {

// "  trace: FILE (N KiB, E events, clocks ±B ms)" then the breakdown and the
// straggler verdict. Nothing for a null `trace`.
void print_trace_summary(std::ostream& os, const nlohmann::ordered_json& trace);

}  // namespace dtbench::report
