#pragma once
// Reporters for `dtbench comm` records: a console table in nccl-tests' layout
// and the JSON form. Both write to an injected stream / return JSON.
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/comm_record.h"

namespace dtbench::report {

class CommConsoleReporter {
 public:
  explicit CommConsoleReporter(std::ostream& out) : out_(out) {}
  void header();
  void row(const CommRecord& r);
  // Average busbw over all rows and placements, total #wrong, skipped notes.
  void footer(const std::vector<CommRecord>& records, const std::vector<std::string>& skipped);

 private:
  std::ostream& out_;
};

nlohmann::ordered_json to_json(const CommRecord& r);
CommRecord comm_record_from_json(const nlohmann::ordered_json& j);

// Mean busbw over every timed placement (GB/s), as nccl-tests' footer.
double average_busbw(const std::vector<CommRecord>& records);
std::int64_t total_wrong(const std::vector<CommRecord>& records);

}  // namespace dtbench::report
