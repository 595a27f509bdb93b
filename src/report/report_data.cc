#include "report/report_data.h"

#include <fstream>

#include <fmt/format.h>

#include "core/error.h"
#include "report/json_io.h"

namespace dtbench::report {
namespace {

bool looks_like_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  if (first.empty()) return false;
  try {
    const auto j = Json::parse(first);
    return j.is_object() && j.value("kind", "") == "header";
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

void load_comm(ReportSource& src, const Json& doc) {
  const std::string backend = src.config.value("backend", "?");
  const int world = doc.at("env").value("world", Json::object()).value("world_size", 0);
  if (!doc.contains("results") || !doc.at("results").is_array())
    throw UsageError(fmt::format("{}: comm report without a 'results' array", src.path));
  for (const auto& r : doc.at("results")) {
    for (const char* placement : {"out_of_place", "in_place"}) {
      if (!r.contains(placement) || !r.at(placement).is_object()) continue;
      const auto& t = r.at(placement);
      CommRow row;
      row.collective = r.value("collective", "?");
      row.backend = backend;
      row.placement = placement;
      row.world_size = world;
      row.bytes = r.value("bytes", std::uint64_t{0});
      row.time_us = t.value("time_us", 0.0);
      row.algbw_gbs = t.value("algbw_gbs", 0.0);
      row.busbw_gbs = t.value("busbw_gbs", 0.0);
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
    p.extras = j.value("extras", Json::object());
    p.key.model = src.config.value("model", "?");
    p.key.world_size = p.run.world_size;
    p.key.reducer = p.run.reducer;
    p.key.bucket_cap_mb = src.config.value("bucket_cap_mb", 25.0);
    p.key.compression = p.run.reducer == "none" ? "none" : src.config.value("compression", "none");
    src.points.push_back(std::move(p));
  }
}

}  // namespace

ReportSource load_report_source(const std::string& path) {
  ReportSource src;
  src.path = path;
  if (looks_like_jsonl(path)) {
    auto log = read_compare_log(path);
    src.kind = "compare";
    src.env = log.header.value("env", Json::object());
    src.config = log.header.value("config", Json::object());
    src.points = std::move(log.points);
    return src;
  }
  const Json doc = read_json_file(path);
  if (!doc.is_object() || !doc.contains("schema"))
    throw UsageError(fmt::format("{}: not a dtbench report (no 'schema')", path));
  const std::string schema = doc.value("schema", "");
  const int version = doc.value("schema_version", 0);
  if (version != 1)
    throw UsageError(fmt::format("{}: {} schema_version {} (this dtbench reads 1)", path, schema,
                                 version));
  src.env = doc.value("env", Json::object());
  src.config = doc.value("config", Json::object());
  if (schema == "dtbench.comm") {
    src.kind = "comm";
    load_comm(src, doc);
  } else if (schema == "dtbench.ddp") {
    src.kind = "ddp";
    load_ddp(src, doc);
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
        "dtbench.compare)",
        path, schema));
  }
  return src;
}

}  // namespace dtbench::report
