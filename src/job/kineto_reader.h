#pragma once
// One rank's PyTorch profiler trace (Kineto's Chrome-trace JSON, as
// torch.profiler's export_chrome_trace and tensorboard_trace_handler write
// it) read into a RankTrace. What it reads, as torch 2.11 writes it:
//  - distributedInfo: backend, rank, world_size, pg_config;
//  - iterations: `ProfilerStep#N` user annotations;
//  - collectives issued: `record_param_comms` cpu_ops (NCCL: Collective
//    name, dtype, In/Out msg nelems, Process Group Name, Group size) or,
//    where the trace has none (Gloo), c10d's `c10d::<name>_` cpu_ops;
//  - their execution: NCCL's `nccl*` GPU kernels, k-th of a group to the
//    k-th issue of that group; Gloo's `gloo:<name>` annotations on its
//    threads (dims and type), k-th to k-th;
//    A run still open when the profiler stopped (Kineto's "finished":
//    false) keeps its place in that order but gives no span;
//  - compute: GPU kernels other than NCCL's where the trace has kernels;
//    otherwise the CPU ops of the thread that marks the iterations, less
//    the collectives' own calls.
// Torch-free: the trace is JSON.
#include <string>

#include "job/job_trace.h"
#include "report/json_io.h"

namespace dtbench::job {

// Whether a parsed document is a Kineto trace (traceEvents) or PyTorch's
// execution trace (schema and nodes: the Chakra format).
bool is_kineto_trace(const report::Json& doc);
bool is_execution_trace(const report::Json& doc);

// Reads one rank's trace. `file` names it in errors. Throws UsageError with
// one line naming the file and what is wrong (no traceEvents, a collective
// without sizes, a bad distributedInfo).
RankTrace read_kineto(const report::Json& doc, const std::string& file);

}  // namespace dtbench::job
