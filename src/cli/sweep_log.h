#pragma once
// The JSON-lines log of a sweep (`ddp --world-sizes`, `compare`): a header
// line, then one line per finished point, appended and flushed as each
// point ends, so an interrupted sweep (a kill, SIGINT, a failed point)
// keeps what it finished and `--resume` runs only the rest. The format is
// the compare log's (report/compare_record.h).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/compare_record.h"

namespace dtbench::cli {

class SweepLog {
 public:
  // With `resume`: reads that log; its configuration must equal `config`
  // and a cut-short last line (a kill mid-append) is dropped. Otherwise
  // `jsonl` ("" = keep no log) must not exist yet. Throws UsageError naming
  // `jsonl_flag` / --resume.
  SweepLog(const std::string& jsonl, const std::string& resume, const nlohmann::ordered_json& config,
           const std::string& jsonl_flag = "--jsonl");

  const std::string& path() const { return path_; }  // "" = no log
  bool resumed() const { return resumed_; }
  const std::vector<report::ComparePoint>& done() const { return done_; }
  // The point with this key id already in the log, or nullptr.
  const report::ComparePoint* find(const std::string& id) const;

  // Writes a new log's header (nothing when resuming or without a log).
  void begin(const nlohmann::ordered_json& env, const nlohmann::ordered_json& config);
  void append(const report::ComparePoint& p);

 private:
  std::string path_;
  bool resumed_ = false;
  std::vector<report::ComparePoint> done_;
};

}  // namespace dtbench::cli
