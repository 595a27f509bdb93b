#pragma once
// The `dtbench comm` driver: for each collective and message size, times
// `iters` back-to-back operations after `warmup`, each on its own window of
// a buffer sized for the largest message (as nccl-tests shifts its buffers,
// so small messages do not stay in cache), every iteration's start and time
// recorded; checks one more run on fresh buffers against the exact expected
// result; gathers every rank's samples and wrong-element counts. Returns
// records; never prints (records stream to `on_record`).
#include <cstdint>
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
  // What a row's numbers mean beyond the table: placements that are n/a and
  // why, composite collectives, buffers staged through host memory.
  std::vector<std::string> notes;
  std::uint64_t seed = 0;      // the run's test-data seed
  double clock_error_us = 0;   // bound on the common clock's error (clock_sync.h)
  // With CommBenchOptions::memory_report, per rank (job order): the bytes of
  // the timing buffers at their largest (one collective's out-of-place and
  // in-place buffers, sized for the largest message), and the allocator's
  // peak over the run (buffers, the check's fresh buffers, the gathers);
  // reserved_peak: the CUDA caching allocator's, -1 on the CPU.
  struct RankMemory {
    std::int64_t buffers_bytes = 0, peak_bytes = 0, reserved_peak_bytes = -1;
  };
  std::vector<RankMemory> memory;
};

// Runs on every rank (all ranks pass the same options). `world` spans every
// rank; `group` is the ranks this one runs the collective with (with
// --split, one of `groups`, each a list of job ranks; without, `world`
// itself and `groups` empty or the one group of every rank). Every group
// runs each size at once; there is one record per group and size. Throws
// UsageError for options that cannot apply to this world (root out of
// range, or outside a group). `on_record` sees each record as it is made,
// with the result so far (its seed, notes and records before this one).
// `more_lanes`: with opts.concurrent K, the K - 1 communicators over the
// same ranks as `group` that run each collective beside it.
CommBenchResult run_comm_bench(
    comm::Communicator& world, comm::Communicator& group, const std::vector<std::vector<int>>& groups,
    const CommBenchOptions& opts,
    const std::function<void(const report::CommRecord&, const CommBenchResult& so_far)>& on_record,
    const std::vector<comm::Communicator*>& more_lanes = {});

}  // namespace dtbench::bench
