#pragma once
// Reporters for `dtbench comm` records: a console table in nccl-tests' layout
// and the JSON form. Both write to an injected stream / return JSON.
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/comm_record.h"
#include "report/ddp_reporter.h"  // percentile_name

namespace dtbench::report {

class CommConsoleReporter {
 public:
  // `percentiles`: the q of the percentile columns each placement shows.
  explicit CommConsoleReporter(std::ostream& out, std::vector<double> percentiles = {50, 99})
      : out_(out), qs_(std::move(percentiles)) {}
  void header();
  void row(const CommRecord& r);
  // Notes, skipped collectives, late ranks and spikes, total #wrong, and the
  // average busbw over all rows and placements. `node_names[n]` describes
  // node n and `node_of_rank[r]` is rank r's node (empty: no topology).
  void footer(const std::vector<CommRecord>& records, const std::vector<std::string>& skipped,
              const std::vector<std::string>& notes = {}, const std::vector<std::string>& node_names = {},
              const std::vector<int>& node_of_rank = {});
  // With more than one node: each node's median lateness over every row
  // (its ranks' start against the median rank's), the latest marked.
  void nodes(const std::vector<CommRecord>& records, const std::vector<std::string>& node_names,
             const std::vector<int>& node_of_rank);

 private:
  std::string cells(const CommTiming& t) const;
  std::ostream& out_;
  std::vector<double> qs_;
};

nlohmann::ordered_json to_json(const CommRecord& r);
CommRecord comm_record_from_json(const nlohmann::ordered_json& j);

// `dtbench comm --csv`: a header line, then one line per row and timed
// placement, under nccl-tests' table names (size, count, type, redop, root,
// time, algbw, busbw, #wrong), then time_stat (what time is over the ranks:
// mean, rank0, min, max, from -a), the row's percentiles (p50, ...), the late
// rank and the spikes. `average` is -a (0..3).
void write_comm_csv(std::ostream& out, const std::vector<CommRecord>& records, int average);

// Mean busbw over every timed placement (GB/s), as nccl-tests' footer.
double average_busbw(const std::vector<CommRecord>& records);
// Wrong elements over every row that ran and was checked.
std::int64_t total_wrong(const std::vector<CommRecord>& records);
// Whether any row that ran was checked (false for a -c 0 run).
bool any_checked(const std::vector<CommRecord>& records);
// Per node, the median over timed placements (with lateness) of the median
// lateness of its ranks, in us. Rows without lateness are left out.
std::vector<double> node_lateness(const std::vector<CommRecord>& records, const std::vector<int>& node_of_rank,
                                  std::size_t nodes);

}  // namespace dtbench::report
