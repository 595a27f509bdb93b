#pragma once
// What `dtbench kvstore` measures and reports: per-iteration samples of each
// worker, the raw TensorPipe ceiling, the summary, the console lines (in the
// format of MXNet's tools/bandwidth/measure.py) and the JSON report
// (schema dtbench.kvstore v1, docs/metrics.md).
#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtbench::report {

struct KvIteration {
  int iter = 0;  // 0-based, warm-up excluded
  double seconds = 0;
  double gbps = 0;  // bytes moved per worker / seconds / 1e9 (dtbench's, per mode)
  // measure.py's "GB/sec per gpu": size x 2(n-1)/n / seconds / 1e9, n = the
  // replicas of one process (0 with one replica, as measure.py prints).
  double gbps_per_gpu = 0;
  double error = std::numeric_limits<double>::quiet_NaN();      // max |got - want|; NaN: not checked
  // measure.py's error: sum over every copy of |got - want| / sum |want|.
  double rel_l1_error = std::numeric_limits<double>::quiet_NaN();
  double staleness = std::numeric_limits<double>::quiet_NaN();  // NaN: not dist_async
};

nlohmann::ordered_json to_json(const KvIteration& it);
// Throws UsageError naming the field on malformed input.
KvIteration kv_iteration_from_json(const nlohmann::json& j);

struct KvSummary {
  double p50_seconds = 0;       // median over every worker's iterations
  double p50_gbps = 0;          // per worker, bytes the mode moves
  double p50_gbps_per_gpu = 0;  // measure.py's figure at the p50 time
  double ceiling_gbps = std::numeric_limits<double>::quiet_NaN();  // raw TensorPipe, p50
  double max_error = std::numeric_limits<double>::quiet_NaN();
  double max_rel_l1_error = std::numeric_limits<double>::quiet_NaN();  // measure.py's, the largest
  double max_abs_staleness = std::numeric_limits<double>::quiet_NaN();
};

KvSummary summarize(const std::vector<std::vector<KvIteration>>& workers, double bytes,
                    const std::vector<double>& ceiling_seconds, double ceiling_bytes,
                    double measure_py_bytes = 0);

// "num of arrays = 161, total size = 102.228128 MB"
std::string kv_size_line(std::size_t arrays, std::size_t total_bytes);
// measure.py's line, then dtbench's own figures:
// "iter 1, 0.052120 sec, 1.961228 GB/sec per gpu, error 0.000000 | moved 3.922456 GB/sec per worker, max abs error 0"
// (dist_async: "staleness S" instead of the errors).
std::string kv_iteration_line(const KvIteration& it);
void print_kv_summary(std::ostream& os, const KvSummary& s, const std::string& mode, int workers);

}  // namespace dtbench::report
