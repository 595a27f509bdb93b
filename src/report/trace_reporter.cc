#include "report/trace_reporter.h"

#include <fmt/format.h>

#include "report/json_io.h"

namespace dtbench::report {

void print_trace_summary(std::ostream& os, const nlohmann::ordered_json& t) {
  if (t.is_null() || !t.is_object()) return;
  const std::string where = "trace summary";
  // Ranks on rank 0's host share its clock (bound 0); others are aligned
  // by round trips, within the largest bound.
  const double bound = json_value_or<double>(t, "clock_max_bound_ms", 0, where);
  const double drift = json_value_or<double>(t, "clock_max_drift_ppm", 0, where);
  os << fmt::format("  trace: {} ({:.1f} KiB, {} events, {})\n", json_value_or<std::string>(t, "file", "?", where),
                    json_value_or<double>(t, "bytes", 0, where) / 1024,
                    json_value_or<long long>(t, "events", 0, where),
                    bound == 0   ? std::string("one clock")
                    : drift > 0 ? fmt::format("clocks aligned within ±{:.3f} ms, drifting up to {:.1f} ppm", bound, drift)
                                : fmt::format("clocks aligned within ±{:.3f} ms", bound));
  // Reports written before the split have no waiting part: none shown.
  const std::string split =
      t.contains("comm_waiting_ms_p50")
          ? fmt::format(" (waiting for a later rank {:.1f}, moving {:.1f})",
                        json_value_or<double>(t, "comm_waiting_ms_p50", 0, where),
                        json_value_or<double>(t, "comm_moving_ms_p50", 0, where))
          : std::string();
  os << fmt::format(
      "    per rank-iteration (p50): compute {:.1f} ms, communication {:.1f} ms{}, overlap {:.0f}%, "
      "exposed communication {:.1f} ms, idle {:.1f} ms\n",
      json_value_or<double>(t, "compute_ms_p50", 0, where), json_value_or<double>(t, "comm_ms_p50", 0, where), split,
      100 * json_value_or<double>(t, "overlap", 0, where),
      json_value_or<double>(t, "exposed_comm_ms_p50", 0, where), json_value_or<double>(t, "idle_ms_p50", 0, where));
  const auto verdict = json_value_or<std::string>(t, "verdict", "", where);
  if (!verdict.empty()) os << "    " << verdict << "\n";
}

}  // namespace dtbench::report
