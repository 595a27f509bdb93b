#pragma once
// `dtbench diff BASE.json TEST.json`: compares two `dtbench ddp` reports as
// PyTorch's benchmarks/distributed/ddp/diff.py does: rows matched by label
// and world size, skipped where the batch sizes differ; sec/iter of every
// rank's iterations pooled, ex/s per rank; diff = -(test - base) / base x 100
// (positive = TEST is faster). Beside them: the throughput change
// (base / test - 1) x 100 and the slowest rank's sec/iter.
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtbench::report {

// Throws UsageError when `doc` is not a dtbench.ddp report of a schema
// version this build reads; `name` names the file in the message.
void check_ddp_report(const nlohmann::ordered_json& doc, const std::string& name);

// diff.py's diff: -(test - base) / base x 100. Throws std::invalid_argument
// for a zero base time.
double time_diff_percent(double base_sec, double test_sec);
// The throughput change: (base / test - 1) x 100. Throws
// std::invalid_argument for a zero time.
double speedup_percent(double base_sec, double test_sec);

// "key: a vs b" lines for every configuration and environment key whose
// values are scalars, flattened with dots ("env.torch.version"); differing
// keys are marked with '*'.
std::vector<std::string> side_by_side(const nlohmann::ordered_json& base,
                                      const nlohmann::ordered_json& test);

// Writes the whole comparison. Throws UsageError for files that cannot be
// compared (schema, model).
void write_ddp_diff(std::ostream& out, const nlohmann::ordered_json& base,
                    const nlohmann::ordered_json& test, const std::vector<double>& percentiles);

}  // namespace dtbench::report
