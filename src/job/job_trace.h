#pragma once
// A user's own training job as its PyTorch profiler traces record it: per
// rank, the iterations (ProfilerStep#N), every collective with its process
// group, size, dtype, issue and execution times, and the compute intervals
// the communication can hide under. Read by job/kineto_reader.h; summarised
// by job/job_summary.h. Torch-free.
#include <cstdint>
#include <string>
#include <vector>

#include "trace/analysis.h"

namespace dtbench::job {

// A span of microseconds on the trace's clock (the interval arithmetic of
// dtbench's own timelines: trace/analysis.h).
using Span = trace::Interval;

// A process group as torch.distributed describes it (distributedInfo.pg_config).
struct ProcessGroup {
  std::string name;         // pg_name: "0" is the default group
  std::string desc;         // pg_desc, e.g. "default_pg"
  std::string backend;      // backend_config, e.g. "cuda:nccl" or "cpu:gloo,cuda:gloo"
  std::vector<int> ranks;   // global ranks, in group order
};

// One collective (or send/recv) as one rank issued and ran it.
struct Collective {
  std::string name;        // allreduce, broadcast, allgather, reduce_scatter, alltoall, send, recv, barrier, ...
  std::string group;       // process group name; "" where the trace does not say (gloo, several groups)
  int group_size = 0;      // 0 where unknown
  std::string dtype;       // float32, bfloat16, ...; "" where unknown
  int64_t in_nelems = -1;  // elements in / out (-1: not recorded)
  int64_t out_nelems = -1;
  int64_t bytes = -1;      // nccl-tests' size: the larger of in and out, in bytes (-1: unknown dtype)
  Span issue;              // the call on the issuing thread (c10d::*_ or record_param_comms)
  Span run{0, -1};         // its execution (Gloo's thread, NCCL's kernel); run.end < 0: not recorded
  int step = -1;           // ProfilerStep#N whose span holds the issue; -1 outside every step
  bool has_run() const { return run.end >= 0; }
};

// One rank's trace.
struct RankTrace {
  std::string file;
  int rank = 0;
  int world_size = 1;
  std::string backend;                   // distributedInfo.backend ("nccl", "gloo"); "" where absent
  std::string device;                    // "cuda" (GPU kernels recorded) or "cpu"
  std::vector<ProcessGroup> groups;
  std::vector<int> step_numbers;         // N of each ProfilerStep#N, ascending
  std::vector<Span> steps;               // their spans (on the issuing thread)
  std::vector<Collective> collectives;   // in issue order
  std::vector<Span> compute;             // merged, ascending: what communication can overlap
  std::string pairing_note;              // where executions stopped pairing with issues; "" where they did not
};

// A whole job: one RankTrace per rank present, ascending by rank.
struct JobTrace {
  std::string source;                    // the directory or files read
  int world_size = 1;
  std::vector<RankTrace> ranks;
  std::vector<std::string> skipped;      // files not read, each with why (execution traces, ...)
};

// Bytes per element of a dtype as the traces name it ("float", "Float",
// "c10::BFloat16", "long int", ...), and dtbench's name for it (float32,
// bfloat16, int64, ...). 0 and "" for a dtype it does not know.
int dtype_bytes(const std::string& trace_dtype);
std::string dtype_name(const std::string& trace_dtype);

// The collective's name without its c10d / Gloo / NCCL decoration:
// "c10d::allreduce_" -> "allreduce", "gloo:all_reduce" -> "allreduce",
// "_allgather_base" -> "allgather", "ncclDevKernel_AllGather_RING_LL" ->
// "allgather". "" where it is no collective.
std::string collective_name(const std::string& traced);

// nccl-tests' bus-bandwidth factor for a collective over n ranks
// (its doc/PERFORMANCE.md): allreduce 2(n-1)/n; allgather, reduce_scatter,
// alltoall, gather, scatter (n-1)/n; broadcast, reduce, send/recv 1; 0 for
// barrier or an unknown name.
double bus_factor(const std::string& collective, int n);

}  // namespace dtbench::job
