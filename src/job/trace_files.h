#pragma once
// Finding and reading a job's traces: one file per rank, or a directory of
// them (torch.profiler's tensorboard_trace_handler writes
// <worker>.<time>.pt.trace.json[.gz] per rank; export_chrome_trace any name),
// gzip-compressed or not, checked as a whole: every rank of the world once,
// one world size.
#include <string>
#include <vector>

#include "job/job_trace.h"

namespace dtbench::job {

struct ReadOptions {
  // Read the ranks present where some rank of the world has no trace (a job
  // that profiled rank 0 only); refused otherwise.
  bool partial = false;
};

// A file's bytes, inflated when it is gzip (by its magic number, whatever its
// name). Throws UsageError naming the file: missing, unreadable, a truncated
// or corrupt gzip stream.
std::string read_maybe_gzip(const std::string& path);

// The trace files PATHS name: a file as given; a directory's regular files
// whose names hold ".json" (sorted). Throws UsageError for a path that does
// not exist or a directory without one.
std::vector<std::string> trace_files(const std::vector<std::string>& paths);

// Reads every file: Kineto traces into ranks; execution traces (Chakra)
// and dtbench's own reports (a --json written beside the traces) listed in
// `skipped` with why. A collective whose dtype only its unfinished
// execution held takes it from the same collective on another rank. Throws UsageError with one line: malformed
// JSON (the file and where), a file that is neither, two traces of one rank,
// disagreeing world sizes, a rank of the world without a trace (unless
// `partial`), no Kineto trace at all.
JobTrace read_job(const std::vector<std::string>& paths, const ReadOptions& opt);

}  // namespace dtbench::job
