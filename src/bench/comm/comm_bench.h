#pragma once
// The `dtbench comm` driver: for each collective and message size, times
// `iters` back-to-back operations after `warmup`, checks one more run against
// the exact expected result, and reduces timings and wrong-element counts
// across ranks. Returns records; never prints (records stream to `on_record`).
#include <functional>
#include <string>
#include <vector>

#include "bench/comm/comm_options.h"
#include "report/comm_record.h"

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::bench {

struct CommBenchResult {
  std::vector<report::CommRecord> records;
  // "reduce_scatter: gloo: ... does not implement reduce_scatter" per skipped collective.
  std::vector<std::string> skipped;
};

// Runs on every rank (all ranks pass the same options). Throws UsageError for
// options that cannot apply to this world (root out of range).
CommBenchResult run_comm_bench(comm::Communicator& comm, const CommBenchOptions& opts,
                               const std::function<void(const report::CommRecord&)>& on_record);

}  // namespace dtbench::bench
