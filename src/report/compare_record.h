#pragma once
// Records of `dtbench compare`: one ComparePoint per grid point (a full ddp
// run of one model × world size × reducer × bucket size × compression), the
// JSON-lines log they are appended to, and the numbers the compare tables
// and the HTML report derive from them. Torch-free.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/ddp_record.h"
#include "stats/stats.h"

namespace dtbench::report {

using Json = nlohmann::ordered_json;

// What identifies a grid point.
struct PointKey {
  std::string model;
  int world_size = 1;
  std::string reducer;
  double bucket_cap_mb = 25;
  std::string compression = "none";
  std::string amp = "none";  // --amp: none, bf16, fp16
  std::string ac = "none";   // --activation-checkpointing: none, full, selective

  // "overlap", "overlap+fp16", "ddp+amp-bf16", "horovod+fp16+amp-fp16",
  // "fsdp+ac-full".
  std::string strategy() const;
  // "mlp/2R/overlap+fp16/25MB": unique per point, used by --resume.
  std::string id() const;
  bool operator==(const PointKey& o) const { return id() == o.id(); }
};

struct ComparePoint {
  PointKey key;
  DdpRun run;
  Json extras;  // threads, buckets, last_loss, param counts, compression stats
};

Json to_json(const PointKey& k);
PointKey point_key_from_json(const Json& j, const std::string& where);
Json to_json(const ComparePoint& p);
ComparePoint compare_point_from_json(const Json& j, const std::string& where);

// ---- the JSON-lines log: one header line, then one line per point ----

// The header line: schema, created, command, env and the configuration
// shared by every point (everything but the grid's own dimensions).
Json compare_log_header(const Json& env, const Json& config, const Json& command);

struct CompareLog {
  Json header;
  std::vector<ComparePoint> points;
  // The last line was cut short (an interrupted write); it was ignored.
  bool truncated_tail = false;
};

// Reads a log. Throws UsageError naming the file and line for a missing
// file, a missing or foreign header, or a malformed line other than the last.
CompareLog read_compare_log(const std::string& path);

// Rewrites a log as header + points atomically (drops a cut-short last line
// before --resume appends to it).
void rewrite_compare_log(const std::string& path, const CompareLog& log);

// "" when two shared configurations match, else "key: a vs b" for the first
// difference (what --resume refuses to mix).
std::string config_mismatch(const Json& before, const Json& now);

// ---- derived numbers ----

// The phases of the compare tables, with their titles.
struct ComparePhase {
  const char* key;    // phase_times() name
  const char* title;  // table title
};
inline const ComparePhase kComparePhases[] = {
    {"forward", "forward"},
    {"backward+comm_wait", "backward incl. exposed communication"},
    {"total", "total"}};

struct ThroughputRow {
  PointKey key;
  stats::MeanBand per_rank;     // examples/s per rank, mean ± 1.96σ over iterations
  double total = 0;             // per_rank.mean × world size
  std::optional<double> efficiency;  // vs the 1-rank point of the same strategy and bucket
};
// One row per point, in the order given; efficiency where a 1-rank point
// with the same model, reducer, compression, amp and bucket size exists.
std::vector<ThroughputRow> throughput_rows(const std::vector<ComparePoint>& points);

// The point the delta% of `p` is measured against: same model, world size,
// bucket size and amp, reducer `baseline`, no compression. nullptr when absent.
const ComparePoint* find_baseline(const std::vector<ComparePoint>& points, const PointKey& p,
                                  const std::string& baseline);

}  // namespace dtbench::report
