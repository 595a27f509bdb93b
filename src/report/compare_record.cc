#include "report/compare_record.h"

#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "report/json_io.h"

namespace dtbench::report {
namespace {

constexpr const char* kSchema = "dtbench.compare";
// 2: runs[].summary is benchmark.py's (every rank's iterations pooled, ex/s
// per rank); slowest_rank_summary holds what summary held in 1. Both read.
constexpr int kSchemaVersion = 2;

}  // namespace

std::string PointKey::strategy() const {
  std::string s = reducer;
  if (compression != "none") s += "+" + compression;
  if (amp != "none") s += "+amp-" + amp;
  if (ac != "none") s += "+ac-" + ac;
  return s;
}

std::string PointKey::id() const {
  return fmt::format("{}/{}R/{}/{:g}MB", model, world_size, strategy(), bucket_cap_mb);
}

Json to_json(const PointKey& k) {
  return {{"model", k.model},
          {"world_size", k.world_size},
          {"reducer", k.reducer},
          {"bucket_cap_mb", k.bucket_cap_mb},
          {"compression", k.compression},
          {"amp", k.amp},
          {"activation_checkpointing", k.ac}};
}

PointKey point_key_from_json(const Json& j, const std::string& where) {
  PointKey k;
  k.model = json_field<std::string>(j, "model", where);
  k.world_size = json_field<int>(j, "world_size", where);
  k.reducer = json_field<std::string>(j, "reducer", where);
  k.bucket_cap_mb = json_field<double>(j, "bucket_cap_mb", where);
  k.compression = json_field<std::string>(j, "compression", where);
  k.amp = json_value_or<std::string>(j, "amp", "none", where);  // absent before amp was an axis
  if (k.amp != "none" && k.amp != "bf16" && k.amp != "fp16")
    throw UsageError(fmt::format("{}: amp '{}' is not none, bf16 or fp16", where, k.amp));
  // Absent before activation checkpointing was an axis.
  k.ac = json_value_or<std::string>(j, "activation_checkpointing", "none", where);
  if (k.ac != "none" && k.ac != "full" && k.ac != "selective")
    throw UsageError(fmt::format("{}: activation_checkpointing '{}' is not none, full or selective", where, k.ac));
  if (k.world_size < 1) throw UsageError(fmt::format("{}: world_size must be at least 1", where));
  return k;
}

Json to_json(const ComparePoint& p) {
  return {{"kind", "point"}, {"key", to_json(p.key)}, {"run", to_json(p.run)}, {"extras", p.extras}};
}

ComparePoint compare_point_from_json(const Json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("key"))
    throw UsageError(fmt::format("{}: not a compare point (no 'key')", where));
  ComparePoint p;
  p.key = point_key_from_json(j.at("key"), where);
  if (!j.contains("run")) throw UsageError(fmt::format("{}: missing key 'run'", where));
  p.run = ddp_run_from_json(j.at("run"), where);
  p.extras = json_value_or<Json>(j, "extras", Json::object(), where);
  if (!p.extras.is_object()) throw UsageError(fmt::format("{}: 'extras' is not an object", where));
  if (p.run.world_size != p.key.world_size)
    throw UsageError(fmt::format("{}: run has {} ranks but the key says {}", where,
                                 p.run.world_size, p.key.world_size));
  return p;
}

Json compare_log_header(const Json& env, const Json& config, const Json& command) {
  return {{"kind", "header"},          {"schema", kSchema}, {"schema_version", kSchemaVersion},
          {"created", utc_timestamp()}, {"command", command}, {"env", env},
          {"config", config}};
}

CompareLog read_compare_log(const std::string& path) {
  std::istringstream in(read_text_file(path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  if (lines.empty()) throw UsageError(fmt::format("{}: empty file, not a compare log", path));
  CompareLog log;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string where = fmt::format("{} line {}", path, i + 1);
    Json j;
    try {
      j = parse_json_text(lines[i], where);
    } catch (const UsageError&) {
      if (i + 1 == lines.size() && i > 0) {  // an append cut short by a kill
        log.truncated_tail = true;
        break;
      }
      throw UsageError(i == 0 ? fmt::format("{}: not a dtbench JSON-lines log (the first line is not "
                                            "one JSON object; a --json report is not a --jsonl log)",
                                            path)
                              : fmt::format("{}: not valid JSON", where));
    }
    if (i == 0) {
      if (!j.is_object() || json_value_or<std::string>(j, "kind", "", where) != "header" ||
          json_value_or<std::string>(j, "schema", "", where) != kSchema)
        throw UsageError(fmt::format("{}: not a dtbench compare log (no {} header)", where, kSchema));
      const auto version = json_value_or<int>(j, "schema_version", 0, where);
      if (version < 1 || version > kSchemaVersion)
        throw UsageError(fmt::format("{}: schema_version {} (this dtbench reads 1 to {})", where, version,
                                     kSchemaVersion));
      for (const char* k : {"env", "config"})
        if (j.contains(k) && !j.at(k).is_object())
          throw UsageError(fmt::format("{}: '{}' is not an object", where, k));
      log.header = j;
      continue;
    }
    log.points.push_back(compare_point_from_json(j, where));
  }
  return log;
}

void rewrite_compare_log(const std::string& path, const CompareLog& log) {
  std::string text = log.header.dump() + "\n";
  for (const auto& p : log.points) text += to_json(p).dump() + "\n";
  write_text_atomic(path, text);
}

std::string config_mismatch(const Json& before, const Json& now) {
  // Keys the config gained after logs were first written, with the value
  // every run before them had: a log without the key ran with it.
  static const Json kAddedSince = {{"tp", 1}};
  for (const auto& [k, v] : now.items()) {
    if (!before.contains(k) && kAddedSince.contains(k) && kAddedSince.at(k) == v) continue;
    if (!before.contains(k)) return fmt::format("{}: absent vs {}", k, v.dump());
    if (before.at(k) != v) return fmt::format("{}: {} vs {}", k, before.at(k).dump(), v.dump());
  }
  for (const auto& [k, v] : before.items())
    if (!now.contains(k)) return fmt::format("{}: {} vs absent", k, v.dump());
  return "";
}

std::vector<ThroughputRow> throughput_rows(const std::vector<ComparePoint>& points) {
  std::vector<ThroughputRow> rows;
  for (const auto& p : points) {
    ThroughputRow r;
    r.key = p.key;
    r.per_rank = stats::mean_band_196(per_rank_throughput(p.run));
    r.total = r.per_rank.mean * p.key.world_size;
    rows.push_back(r);
  }
  for (auto& r : rows) {
    for (const auto& one : rows) {
      if (one.key.world_size != 1 || one.key.model != r.key.model ||
          one.key.reducer != r.key.reducer || one.key.compression != r.key.compression ||
          one.key.amp != r.key.amp || one.key.ac != r.key.ac || one.key.bucket_cap_mb != r.key.bucket_cap_mb ||
          !(one.total > 0))
        continue;
      r.efficiency = stats::scaling_efficiency(r.total, r.key.world_size, one.total);
      break;
    }
  }
  return rows;
}

const ComparePoint* find_baseline(const std::vector<ComparePoint>& points, const PointKey& p,
                                  const std::string& baseline) {
  for (const auto& q : points)
    if (q.key.model == p.model && q.key.world_size == p.world_size &&
        q.key.bucket_cap_mb == p.bucket_cap_mb && q.key.reducer == baseline &&
        q.key.compression == "none" && q.key.amp == p.amp && q.key.ac == p.ac)
      return &q;
  return nullptr;
}

}  // namespace dtbench::report
