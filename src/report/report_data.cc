#include "report/report_data.h"

#include <fstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/log.h"
#include "report/gantt_chart.h"
#include "report/json_io.h"
#include "stats/stats.h"

namespace dtbench::report {
namespace {

bool looks_like_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  if (first.empty()) return false;
  try {
    const auto j = parse_json_text(first, path);
    return j.is_object() && j.contains("kind") && j.at("kind") == "header";
  } catch (const UsageError&) {
    return false;
  }
}

// The name each read field has in a comm report of this schema version:
// nccl-tests' (-J) from version 3, dtbench's before.
struct CommNames {
  const char *size, *time, *algbw, *busbw;
};

// -a's row time: 0 rank 0, 1 the ranks' mean, 2 the fastest rank, 3 the
// slowest (nccl-tests' RANK0/AVG/MIN/MAX).
const char* row_time_stat(int average) {
  switch (average) {
    case 0: return "rank0";
    case 2: return "min";
    case 3: return "max";
    default: return "mean";
  }
}

void load_comm(ReportSource& src, const Json& doc, int version) {
  const CommNames names = version >= 3 ? CommNames{"size", "time", "alg_bw", "bus_bw"}
                                       : CommNames{"bytes", "time_us", "algbw_gbs", "busbw_gbs"};
  const auto backend = json_value_or<std::string>(src.config, "backend", "?", src.path + " config");
  const auto stat = row_time_stat(json_value_or<int>(src.config, "average", 1, src.path + " config"));
  const auto world = json_value_or<Json>(src.env, "world", Json::object(), src.path + " env");
  const int world_size = json_value_or<int>(world, "world_size", 0, src.path + " env.world");
  if (!doc.contains("results") || !doc.at("results").is_array())
    throw UsageError(fmt::format("{}: comm report without a 'results' array", src.path));
  std::size_t i = 0;
  for (const auto& r : doc.at("results")) {
    const std::string where = fmt::format("{} results[{}]", src.path, i++);
    for (const char* placement : {"out_of_place", "in_place"}) {
      if (!r.is_object() || !r.contains(placement) || r.at(placement).is_null()) continue;
      const auto& t = r.at(placement);
      const std::string at = where + "." + placement;
      CommRow row;
      row.collective = json_field<std::string>(r, "collective", where);
      row.backend = backend;
      row.placement = placement;
      row.world_size = world_size;
      row.bytes = json_field<std::uint64_t>(r, names.size, where);
      row.time_us = json_field<double>(t, names.time, at);
      row.time_stat = row.collective == "pingpong" ? "rank0" : stat;  // pingpong's is rank 0's always
      row.cycle = json_value_or<int>(r, "cycle", 0, where);
      row.group = json_value_or<int>(r, "group", -1, where);
      // pingpong's time is rank 0's round trip whatever -a says (its
      // rank 1 times something else): its mean is that time too.
      const auto ranks = json_value_or<std::vector<double>>(t, "rank_us", {}, at);
      row.mean_us = ranks.empty() || row.collective == "pingpong" ? row.time_us : stats::mean(ranks);
      row.algbw_gbs = json_field<double>(t, names.algbw, at);
      row.busbw_gbs = json_field<double>(t, names.busbw, at);
      row.cpu_util = json_value_or<double>(t, "cpu_util", -1.0, at);
      row.lateness_us = json_value_or<std::vector<double>>(t, "lateness_us", {}, at);
      const auto pct = json_value_or<Json>(t, "percentiles_us", Json::object(), at);
      if (pct.is_object())
        for (const auto& [name, v] : pct.items())
          if (v.is_number()) row.percentiles_us.emplace_back(name, v.get<double>());
      src.comm.push_back(row);
    }
  }
}

void load_ddp(ReportSource& src, const Json& doc) {
  if (!doc.contains("runs") || !doc.at("runs").is_array())
    throw UsageError(fmt::format("{}: ddp report without a 'runs' array", src.path));
  std::size_t i = 0;
  for (const auto& j : doc.at("runs")) {
    const std::string where = fmt::format("{} runs[{}]", src.path, i++);
    ComparePoint p;
    p.run = ddp_run_from_json(j, where);
    if (p.run.tp > 1 || p.run.pp > 1) {  // its key (model, world, reducer) would read as a data-parallel row
      log::warn(fmt::format("{}: row '{}' is model-parallel (tp {}, pp {}); the report does not draw layouts yet: left out",
                            where, p.run.label, p.run.tp, p.run.pp));
      continue;
    }
    p.extras = json_value_or<Json>(j, "extras", Json::object(), where);
    if (!p.extras.is_object()) throw UsageError(fmt::format("{}: 'extras' is not an object", where));
    const std::string cfg = src.path + " config";
    p.key.model = json_value_or<std::string>(src.config, "model", "?", cfg);
    p.key.world_size = p.run.world_size;
    p.key.reducer = p.run.reducer;
    p.key.bucket_cap_mb = json_value_or<double>(src.config, "bucket_cap_mb", 25.0, cfg);
    p.key.compression = p.run.reducer == "none"
                            ? "none"
                            : json_value_or<std::string>(src.config, "compression", "none", cfg);
    p.key.amp = json_value_or<std::string>(src.config, "amp", "none", cfg);
    p.key.ac = json_value_or<std::string>(src.config, "activation_checkpointing", "none", cfg);
    src.points.push_back(std::move(p));
  }
}

void load_project(ReportSource& src, const Json& doc) {
  if (!doc.contains("rows") || !doc.at("rows").is_array())
    throw UsageError(fmt::format("{}: project report without a 'rows' array", src.path));
  const auto profile = json_value_or<Json>(doc, "profile", Json::object(), src.path);
  src.projection_model = json_value_or<std::string>(profile, "model", "", src.path + " profile");
  const auto memory = json_value_or<Json>(doc, "memory", Json::object(), src.path);
  if (memory.contains("limit_bytes") && !memory.at("limit_bytes").is_null())
    src.projection_memory_limit = json_field<double>(memory, "limit_bytes", src.path + " memory");
  src.projection_search = doc.contains("search") && doc.at("search").is_object();
  std::size_t i = 0;
  for (const auto& r : doc.at("rows")) {
    const std::string where = fmt::format("{} rows[{}]", src.path, i++);
    ProjectionPoint p;
    if (src.projection_search) {
      p.layout = json_field<std::string>(r, "name", where);
      const auto l = json_field<Json>(r, "layout", where);
      p.layout_label = fmt::format("#{} {} dp{} tp{} pp{}", i, json_field<std::string>(r, "strategy", where),
                                   json_field<int>(l, "dp", where + " layout"), json_field<int>(l, "tp", where + " layout"),
                                   json_field<int>(l, "pp", where + " layout"));
    }
    p.world_size = json_field<int>(r, "world_size", where);
    p.nodes = json_field<int>(r, "nodes", where);
    p.iteration_s = json_field<double>(r, "iteration_s", where);
    p.efficiency = json_field<double>(r, "scaling_efficiency", where);
    p.exposed_comm_s = json_field<double>(r, "exposed_comm_s", where);
    p.strategy = json_value_or<std::string>(r, "strategy", "ddp", where);
    p.examples_per_s = json_value_or<double>(r, "examples_per_sec", 0.0, where);
    if (r.contains("tokens_per_sec_per_rank") && !r.at("tokens_per_sec_per_rank").is_null())
      p.tokens_per_s_per_rank = json_field<double>(r, "tokens_per_sec_per_rank", where);
    if (r.contains("memory") && r.at("memory").is_object())
      p.memory_bytes = json_field<double>(r.at("memory"), "total_bytes", where + " memory");
    if (r.contains("measured_s") && !r.at("measured_s").is_null()) {
      p.has_measured = true;
      p.measured_s = json_field<double>(r, "measured_s", where);
    }
    if (p.world_size < 1 || !(p.iteration_s > 0))
      throw UsageError(fmt::format("{}: world_size and iteration_s must be positive", where));
    src.projection.push_back(p);
  }
}

ReportSource load(const std::string& path) {
  ReportSource src;
  src.path = path;
  if (looks_like_jsonl(path)) {
    auto log = read_compare_log(path);
    src.kind = "compare";
    src.env = json_value_or<Json>(log.header, "env", Json::object(), path);
    src.config = json_value_or<Json>(log.header, "config", Json::object(), path);
    src.points = std::move(log.points);
    return src;
  }
  const Json doc = read_json_file(path);
  if (is_dtbench_trace(doc)) {
    src.kind = "trace";
    src.trace = doc;
    return src;
  }
  if (!doc.is_object() || !doc.contains("schema"))
    throw UsageError(fmt::format("{}: not a dtbench report (no 'schema')", path));
  const auto schema = json_value_or<std::string>(doc, "schema", "", path);
  const auto version = json_value_or<int>(doc, "schema_version", 0, path);
  // dtbench.ddp and dtbench.compare are at 2 (runs[].summary pooled as
  // benchmark.py's), dtbench.comm at 3 (2: per-iteration samples, lateness;
  // 3: nccl-tests' field names); the rest at 1. Earlier versions read too.
  const int newest = schema == "dtbench.comm" ? 3 : schema == "dtbench.ddp" || schema == "dtbench.compare" ? 2 : 1;
  if (version < 1 || version > newest)
    throw UsageError(fmt::format("{}: {} schema_version {} (this dtbench reads 1{})", path, schema,
                                 version, newest > 1 ? fmt::format(" to {}", newest) : ""));
  src.env = json_value_or<Json>(doc, "env", Json::object(), path);
  src.config = json_value_or<Json>(doc, "config", Json::object(), path);
  if (!src.env.is_object() || !src.config.is_object())
    throw UsageError(fmt::format("{}: 'env' and 'config' must be objects", path));
  if (schema == "dtbench.comm") {
    src.kind = "comm";
    load_comm(src, doc, version);
  } else if (schema == "dtbench.ddp") {
    src.kind = "ddp";
    load_ddp(src, doc);
  } else if (schema == "dtbench.project") {
    src.kind = "project";
    load_project(src, doc);
  } else if (schema == "dtbench.compare") {
    src.kind = "compare";
    if (!doc.contains("points") || !doc.at("points").is_array())
      throw UsageError(fmt::format("{}: compare report without a 'points' array", path));
    std::size_t i = 0;
    for (const auto& j : doc.at("points"))
      src.points.push_back(compare_point_from_json(j, fmt::format("{} points[{}]", path, i++)));
  } else {
    throw UsageError(fmt::format(
        "{}: schema '{}' is not one dtbench report reads (dtbench.comm, dtbench.ddp, "
        "dtbench.compare, dtbench.project)",
        path, schema));
  }
  return src;
}

}  // namespace

ReportSource load_report_source(const std::string& path) {
  try {
    return load(path);
  } catch (const nlohmann::json::exception& e) {  // a shape no check above anticipated
    throw UsageError(fmt::format("{}: malformed report: {}", path, printable(e.what(), 200)));
  }
}

}  // namespace dtbench::report
