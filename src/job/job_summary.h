#pragma once
// What a job's traces say (docs/metrics.md "Your own job"): per rank and
// iteration the step time, compute, communication, and how much of the
// communication compute hid; per collective class (name, group, dtype,
// size) its count, time and nccl-tests' algbw/busbw; per iteration the
// spread of step times over ranks. Pure functions of the traces.
#include <cstdint>
#include <string>
#include <vector>

#include "job/job_trace.h"

namespace dtbench::job {

// One rank's iteration, microseconds. comm is the union of the runs of the
// collectives issued in the step; overlapped its part under compute;
// exposed = comm - overlapped. compute is measured in the step's window:
// its span on the CPU; on a GPU from its start to the end of its last
// collective's run where that is later (kernels run after their launch).
// waiting/moving: comm split at each collective's last start (the latest
// rank's start of its execution: no data moves before every rank has
// joined): waiting = the time its collectives only waited, moving = comm -
// waiting; 0 and 0 where JobSummary::split is false.
struct StepFigures {
  int rank = 0, step = 0;
  double time_us = 0, compute_us = 0, comm_us = 0, overlapped_us = 0, exposed_us = 0;
  double waiting_us = 0, moving_us = 0;
  int collectives = 0;
  int64_t bytes = 0;  // of the collectives whose size is known
};

// Every occurrence of one collective of one size, over ranks and iterations.
struct CollectiveClass {
  std::string name, group, dtype;
  int group_size = 0;
  int64_t bytes = -1;
  int count = 0;        // occurrences, every rank
  int timed = 0;        // of them with an execution span
  double time_p50_us = 0, time_min_us = 0, time_max_us = 0;
  double algbw_gbs = 0, busbw_gbs = 0;  // at the median time; 0 where size or time unknown
  // With the split: the medians of each run's waiting and moving parts, and
  // busbw at the moving median (nccl-tests times a collective every rank
  // has joined).
  double wait_p50_us = 0, move_p50_us = 0, busbw_moving_gbs = 0;
};

// One iteration over the ranks that traced it.
struct StepSpread {
  int step = 0, ranks = 0, slowest_rank = 0;
  double min_us = 0, max_us = 0;
};

struct JobSummary {
  std::vector<StepFigures> steps;        // by rank, then step
  std::vector<CollectiveClass> classes;  // by group, name, size
  std::vector<StepSpread> spread;        // by step
  int collectives = 0, without_run = 0, outside_steps = 0;
  // Whether communication is split into waiting and moving: every rank of
  // each group traced, more than one rank, and the ranks' clocks agreeing
  // (each collective's runs overlap in time on every rank, as a collective's
  // must); `split_note` says why not.
  bool split = false;
  std::string split_note;
  // Why the ranks' agreement was not checked (check_consistent's), "" where it was.
  std::string unchecked_note;
};

JobSummary summarize(const JobTrace& job);

// The ranks of each process group must issue the same collectives, in the
// same order, of the same sizes, over the iterations every rank traced;
// where they do not, the job would hang or reduce the wrong tensors. Throws
// UsageError naming the first disagreement: the group, the collective's
// index and iteration, the two ranks and what each issued (its size and
// dtype). Returns why it could not check ("" where it did): a rank with
// several groups whose collectives the trace does not assign (Gloo).
std::string check_consistent(const JobTrace& job);

}  // namespace dtbench::job
