#pragma once
// What `dtbench report` reads: dtbench.comm, dtbench.ddp and dtbench.compare
// reports (the JSON report or the compare JSON-lines log), normalised into
// one shape. Torch-free.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/compare_record.h"

namespace dtbench::report {

// One (collective, size, placement) of a comm report.
struct CommRow {
  std::string collective, backend, placement;  // placement: out_of_place, in_place
  int world_size = 0;
  std::uint64_t bytes = 0;
  double time_us = 0, algbw_gbs = 0, busbw_gbs = 0;
  std::string time_stat = "mean";  // what time_us is over the ranks (comm -a): mean, rank0, min, max
  double mean_us = 0;              // the ranks' mean time whatever -a chose (the projection's)
  double cpu_util = -1;  // cores busy per rank while it ran; -1: not in the report
  // Per rank: its start after the median rank's (us); empty in reports
  // before per-iteration samples.
  std::vector<double> lateness_us{};
  // The row's percentiles of every iteration ("p50", us), as written.
  std::vector<std::pair<std::string, double>> percentiles_us{};
  int cycle = 0;   // pass over the sweep (-N), from 0
  int group = -1;  // --split group, -1 without
};

// One row of a `dtbench project` report.
struct ProjectionPoint {
  std::string strategy = "ddp";  // reports before the sharded strategies hold ddp rows only
  int world_size = 0, nodes = 0;
  double iteration_s = 0, efficiency = 0, exposed_comm_s = 0;
  double examples_per_s = 0;    // whole job
  double tokens_per_s_per_rank = 0;  // token models; 0: not one
  double memory_bytes = -1;     // per rank (total); -1: not in the report
  std::string layout;           // --search rows: the layout's name
  std::string layout_label;     // and a short one for a chart's axis: "#1 zero2 dp32 tp4 pp2"
  bool has_measured = false;
  double measured_s = 0;
};

struct ReportSource {
  std::string path;
  std::string kind;  // "comm", "ddp", "compare", "trace", "project"
  Json env, config;
  // ddp rows and compare points, keyed alike (a ddp report's "no ddp" row
  // has reducer "none" and 1 rank).
  std::vector<ComparePoint> points;
  std::vector<CommRow> comm;
  Json trace;  // kind "trace": a Chrome trace written by --trace
  std::vector<ProjectionPoint> projection;  // kind "project"
  std::string projection_model;             // kind "project": the profiled model
  double projection_memory_limit = 0;       // kind "project": --memory-per-rank (0: none)
  bool projection_search = false;           // kind "project": a --search (rows are layouts of one world size)
};

// Reads one file (a report, a compare log or a --trace file). Throws UsageError naming it for anything that is not a
// readable dtbench report of a known schema and version.
ReportSource load_report_source(const std::string& path);

}  // namespace dtbench::report
