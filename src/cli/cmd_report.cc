// `dtbench report A.json [B.json ...] -o report.html [--csv data.csv]`: one
// self-contained HTML page (inline SVG charts, no network needed) and/or a
// tidy CSV from comm, ddp and compare reports (JSON or compare JSON-lines).
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/units.h"
#include "report/csv_report.h"
#include "report/html_report.h"
#include "report/json_io.h"
#include "report/report_data.h"

namespace dtbench::cli {
namespace {

struct ReportFlags {
  std::vector<std::string> inputs;
  std::string html = "dtbench-report.html";
  std::string csv;
  std::string title = "dtbench report";
  std::string ceiling;  // --busbw-ceiling
};

int run_report(const ReportFlags& f) {
  if (!f.html.empty()) report::require_writable_path(f.html, "-o");
  if (!f.csv.empty()) report::require_writable_path(f.csv, "--csv");
  report::FindingsOptions findings;
  if (!f.ceiling.empty()) findings.busbw_ceiling_gbs = parse_bandwidth(f.ceiling, "--busbw-ceiling") / 1e9;
  std::vector<report::ReportSource> sources;
  for (const auto& path : f.inputs) sources.push_back(report::load_report_source(path));
  bool any = false;
  for (const auto& s : sources) any = any || !s.points.empty() || !s.comm.empty() || s.kind == "trace" || !s.projection.empty();
  if (!any) throw UsageError("the inputs hold no runs and no comm results: nothing to chart");
  // Everything is rendered before anything is written: no half-written output.
  std::ostringstream html, csv;
  if (!f.html.empty()) report::write_html(html, sources, f.title, findings);
  if (!f.csv.empty()) report::write_csv(csv, sources);
  if (!f.html.empty()) {
    report::write_text_atomic(f.html, html.str());
    std::cout << "HTML: " << f.html << "\n";
  }
  if (!f.csv.empty()) {
    report::write_text_atomic(f.csv, csv.str());
    std::cout << "CSV: " << f.csv << "\n";
  }
  return 0;
}

}  // namespace

Action register_report(CLI::App& app) {
  auto f = std::make_shared<ReportFlags>();
  auto* cmd = app.add_subcommand(
      "report", "Self-contained HTML report (inline SVG charts) and tidy CSV from comm, ddp, "
                "compare and project reports");
  cmd->add_option("REPORTS", f->inputs,
                  "Reports to chart: JSON from comm/ddp/compare/project --json, a compare --jsonl log, or "
                  "a --trace file (drawn as a Gantt chart of one iteration)")
      ->required();
  cmd->add_option("-o,--output", f->html, "HTML file to write (\"\" = none)")->capture_default_str();
  cmd->add_option("--csv", f->csv, "Also write the data as tidy CSV here");
  cmd->add_option("--title", f->title, "Page title")->capture_default_str();
  cmd->add_option("--busbw-ceiling", f->ceiling,
                  "The link's bandwidth, to state each collective's peak busbw as a share of it (e.g. "
                  "100Gbit/s, 25GB/s, 4x200Gbit/s)");
  return [f]() { return run_report(*f); };
}

}  // namespace dtbench::cli
