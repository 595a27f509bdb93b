#include "report/kvstore_record.h"

#include <algorithm>

#include <fmt/format.h>

#include "report/json_io.h"
#include "stats/stats.h"

namespace dtbench::report {
namespace {

nlohmann::ordered_json number_or_null(double v) {
  return std::isnan(v) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v);
}

double nan_if_null(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::numeric_limits<double>::quiet_NaN();
  return json_field<double>(j, key, "kvstore iteration");
}

}  // namespace

nlohmann::ordered_json to_json(const KvIteration& it) {
  return {{"iter", it.iter},
          {"seconds", it.seconds},
          {"gbps", it.gbps},
          {"gbps_per_gpu", it.gbps_per_gpu},
          {"error", number_or_null(it.error)},
          {"rel_l1_error", number_or_null(it.rel_l1_error)},
          {"staleness", number_or_null(it.staleness)}};
}

KvIteration kv_iteration_from_json(const nlohmann::json& j) {
  KvIteration it;
  it.iter = json_field<int>(j, "iter", "kvstore iteration");
  it.seconds = json_field<double>(j, "seconds", "kvstore iteration");
  it.gbps = json_field<double>(j, "gbps", "kvstore iteration");
  if (j.contains("gbps_per_gpu")) it.gbps_per_gpu = json_field<double>(j, "gbps_per_gpu", "kvstore iteration");
  it.error = nan_if_null(j, "error");
  it.rel_l1_error = nan_if_null(j, "rel_l1_error");
  it.staleness = nan_if_null(j, "staleness");
  return it;
}

KvSummary summarize(const std::vector<std::vector<KvIteration>>& workers, double bytes,
                    const std::vector<double>& ceiling_seconds, double ceiling_bytes,
                    double measure_py_bytes) {
  KvSummary s;
  std::vector<double> secs;
  for (const auto& w : workers)
    for (const auto& it : w) {
      secs.push_back(it.seconds);
      if (!std::isnan(it.error))
        s.max_error = std::isnan(s.max_error) ? it.error : std::max(s.max_error, it.error);
      if (!std::isnan(it.rel_l1_error))
        s.max_rel_l1_error =
            std::isnan(s.max_rel_l1_error) ? it.rel_l1_error : std::max(s.max_rel_l1_error, it.rel_l1_error);
      if (!std::isnan(it.staleness))
        s.max_abs_staleness = std::isnan(s.max_abs_staleness)
                                  ? std::fabs(it.staleness)
                                  : std::max(s.max_abs_staleness, std::fabs(it.staleness));
    }
  if (!secs.empty()) {
    s.p50_seconds = stats::percentile(secs, 50);
    s.p50_gbps = bytes / s.p50_seconds / 1e9;
    s.p50_gbps_per_gpu = measure_py_bytes / s.p50_seconds / 1e9;
  }
  if (!ceiling_seconds.empty())
    s.ceiling_gbps = ceiling_bytes / stats::percentile(ceiling_seconds, 50) / 1e9;
  return s;
}

std::string kv_size_line(std::size_t arrays, std::size_t total_bytes) {
  return fmt::format("num of arrays = {}, total size = {:.6f} MB", arrays,
                     static_cast<double>(total_bytes) / 1e6);
}

std::string kv_iteration_line(const KvIteration& it) {
  // measure.py: 'iter %d, %f sec, %f GB/sec per gpu, error %f'.
  std::string line = fmt::format("iter {}, {:.6f} sec, {:.6f} GB/sec per gpu, ", it.iter + 1, it.seconds,
                                 it.gbps_per_gpu);
  if (!std::isnan(it.staleness)) line += fmt::format("staleness {:g}", it.staleness);
  else if (!std::isnan(it.rel_l1_error)) line += fmt::format("error {:.6f}", it.rel_l1_error);
  else line += "error -";
  line += fmt::format(" | moved {:.6f} GB/sec per worker", it.gbps);
  if (std::isnan(it.staleness) && !std::isnan(it.error)) line += fmt::format(", max abs error {:g}", it.error);
  return line;
}

void print_kv_summary(std::ostream& os, const KvSummary& s, const std::string& mode, int workers) {
  os << fmt::format("# {} with {} worker(s): p50 {:.6f} sec/iter, {:.3f} GB/sec per gpu (measure.py's), "
                    "{:.3f} GB/sec moved per worker",
                    mode, workers, s.p50_seconds, s.p50_gbps_per_gpu, s.p50_gbps);
  if (!std::isnan(s.ceiling_gbps))
    os << fmt::format("; raw TensorPipe ceiling {:.3f} GB/sec ({:.2f} of it)", s.ceiling_gbps,
                      s.p50_gbps / s.ceiling_gbps);
  os << "\n";
  if (!std::isnan(s.max_error))
    os << fmt::format("# max error {:g} (must be 0); measure.py's relative L1 error at most {:g}\n", s.max_error,
                      s.max_rel_l1_error);
  if (!std::isnan(s.max_abs_staleness))
    os << fmt::format("# max |staleness| {:g} pushes per worker\n", s.max_abs_staleness);
}

}  // namespace dtbench::report
