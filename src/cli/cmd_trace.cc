// `dtbench trace read PATH...`: a user's own job as its PyTorch profiler
// traces record it (one Kineto trace per rank, a directory of them, gzip or
// not): per rank and iteration where the time went, and every collective
// with its group, size, time and nccl-tests' bandwidths (docs/guide/your-job.md).
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "job/job_reporter.h"
#include "job/job_summary.h"
#include "job/trace_files.h"
#include "report/json_io.h"

namespace dtbench::cli {
namespace {

struct TraceReadFlags {
  std::vector<std::string> paths;
  std::string json;
  bool partial = false;
};

int run_trace_read(const TraceReadFlags& f) {
  if (!f.json.empty()) report::require_writable_path(f.json, "--json");
  const auto job = job::read_job(f.paths, {f.partial});
  const std::string unchecked = job::check_consistent(job);
  auto summary = job::summarize(job);
  summary.unchecked_note = unchecked;
  // Rendered first, written whole: a failure prints nothing but the error.
  std::ostringstream text;
  job::write_job_text(text, job, summary);
  if (!f.json.empty()) report::write_json_atomic(f.json, job::job_json(job, summary));
  std::cout << text.str();
  if (!f.json.empty()) std::cout << "\nwrote " << f.json << "\n";
  return 0;
}

}  // namespace

Action register_trace(CLI::App& app) {
  auto f = std::make_shared<TraceReadFlags>();
  auto* cmd = app.add_subcommand("trace", "Read a job's own PyTorch profiler traces (torch.profiler, one per rank)");
  cmd->require_subcommand(1);
  auto* read = cmd->add_subcommand(
      "read", "Where each rank's iterations went and every collective's group, size, time and busbw, from its "
              "Kineto traces");
  read->add_option("PATH", f->paths,
                   "Trace files (one per rank; .json or .json.gz) or directories of them "
                   "(torch.profiler's tensorboard_trace_handler writes one per rank)")
      ->required();
  read->add_option("--json", f->json, "Also write the figures and every collective as JSON (dtbench.job_trace)");
  read->add_flag("--partial", f->partial,
                 "Read the ranks present when some rank of the world has no trace (refused otherwise)");
  return [f]() { return run_trace_read(*f); };
}

}  // namespace dtbench::cli
