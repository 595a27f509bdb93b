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
  // With more than one node: each node's time relative to the job's, the
  // slowest marked. `node_names[n]` describes node n (launch::describe_node).
  void nodes(const std::vector<CommRecord>& records, const std::vector<std::string>& node_names);

 private:
  std::ostream& out_;
};

nlohmann::ordered_json to_json(const CommRecord& r);
CommRecord comm_record_from_json(const nlohmann::ordered_json& j);

// Mean busbw over every timed placement (GB/s), as nccl-tests' footer.
double average_busbw(const std::vector<CommRecord>& records);
std::int64_t total_wrong(const std::vector<CommRecord>& records);
// For each node, the mean over timed placements of node_us[n] / time_us
// (1.0 = as fast as the job's average rank); rows without node times are left out.
std::vector<double> node_time_ratios(const std::vector<CommRecord>& records, std::size_t nodes);

}  // namespace dtbench::report
