#include "cli/sweep_log.h"

#include <filesystem>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"
#include "report/json_io.h"

namespace dtbench::cli {

SweepLog::SweepLog(const std::string& jsonl, const std::string& resume,
                   const nlohmann::ordered_json& config, const std::string& jsonl_flag) {
  if (!resume.empty()) {
    path_ = resume;
    resumed_ = true;
    auto log = report::read_compare_log(resume);
    const auto diff = report::config_mismatch(log.header.value("config", report::Json::object()), config);
    if (!diff.empty())
      throw UsageError(fmt::format(
          "--resume {}: it was run with a different configuration ({}); use the same flags or a "
          "new {}",
          resume, diff, jsonl_flag));
    if (log.truncated_tail) {
      log::warn(fmt::format("{}: the last line was cut short (interrupted write); dropped, that "
                            "point runs again",
                            resume));
      report::rewrite_compare_log(resume, log);
    }
    done_ = std::move(log.points);
    return;
  }
  path_ = jsonl;
  if (path_.empty()) return;
  report::require_writable_path(path_, jsonl_flag);
  if (std::filesystem::exists(path_))
    throw UsageError(fmt::format("{} {} already exists: continue it with --resume {}, or remove it",
                                 jsonl_flag, path_, path_));
}

const report::ComparePoint* SweepLog::find(const std::string& id) const {
  for (const auto& p : done_)
    if (p.key.id() == id) return &p;
  return nullptr;
}

void SweepLog::begin(const nlohmann::ordered_json& env, const nlohmann::ordered_json& config) {
  if (path_.empty() || resumed_) return;
  report::append_jsonl(path_, report::compare_log_header(env, config, original_args()));
}

void SweepLog::append(const report::ComparePoint& p) {
  if (!path_.empty()) report::append_jsonl(path_, report::to_json(p));
}

}  // namespace dtbench::cli
