#pragma once
// One `dtbench ddp` run on this process's rank: model, reducer, training,
// then every rank's samples gathered to rank 0 and the replicas verified.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "layout/mesh_comms.h"
#include "launch/topology.h"
#include "launch/world.h"
#include "report/ddp_record.h"
#include "train/compression.h"
#include "train/train_options.h"
#include "train/phase_times.h"

namespace dtbench::bench {

struct DdpBenchResult {
  report::DdpRun run;  // complete on rank 0; this rank's samples only elsewhere
  int threads = 1;     // intra-op threads this rank used
  int blas_threads = 0;  // the BLAS library's own pool, set to `threads` (0: the BLAS has none)
  bool flush_denormal = false;    // subnormal floats flushed to zero on this CPU
  bool buffers_compared = false;  // the replica check compared buffers too (kept in step)
  int buckets = 0;     // gradient buckets (timed iterations' buckets; 0 for none)
  double last_loss = 0;
  long long param_tensors = 0, param_elements = 0;
  train::CompressionStats compression;  // dtype "none" without --compression
  double minor_faults_per_iter = 0;     // rank 0's, timed iterations
  double cpu_s_per_iter = 0;            // rank 0's process, timed iterations
  double host_steal_s_per_iter = -1;    // rank 0's host, timed iterations (-1: not reported)
  std::string amp = "none";
  long long amp_skipped_steps = 0;      // --amp fp16
  double amp_final_scale = 0;
  // Rank 0's model state by kind (bytes) and, on a GPU, the caching
  // allocator's reserved peak (-1 on the CPU); run.peak_bytes and
  // run.model_state_bytes hold the most over the ranks.
  std::int64_t param_bytes = 0, grad_bytes = 0, optimizer_bytes = 0;
  std::int64_t reserved_peak_bytes = -1;
  std::string device = "CPU";           // device::describe of this rank's device
  bool channels_last = false;
  train::PhaseTimes device_times;       // --device cuda: by CUDA events (this rank)
  nlohmann::ordered_json trace;         // --trace: the analysis (rank 0), else null
  layout::ParallelDims dims;            // the run's mesh (dp x tp)
  // With tp > 1: the model's parameter elements before the split (rank 0's
  // param_elements are its part).
  long long whole_param_elements = 0;
  // With tp > 1, rank 0's tensor-parallel sums per timed iteration (forward
  // and backward; layout/tp_region.h's TpCommMeter): seconds from each
  // allreduce's start to its wait's end, how many, their bytes.
  double tp_comm_s_per_iter = 0, tp_comm_calls_per_iter = 0, tp_comm_bytes_per_iter = 0;
  // With pp > 1: the schedule, its microbatches and stages per rank, the
  // blocks of each of the pp · v stages, and per job rank (gathered) the
  // measured bubble (the share of its timed steps spent waiting on the
  // pipeline's receives and sends) and the peak bytes; the schedule's own
  // bubble; rank 0's pipeline bytes sent per timed iteration.
  std::string pp_schedule;
  int microbatches = 1, stages_per_rank = 1;
  std::vector<int> stage_blocks;
  std::vector<double> pp_bubble_per_rank;
  std::vector<std::int64_t> peak_bytes_per_rank;
  double pp_schedule_bubble = 0, pp_bytes_per_iter = 0, pp_wait_s_per_iter = 0;
};

// Runs opts on this rank, on `mesh` (layout/mesh_comms.h: its world
// communicator is null only for one rank without synchronisation). With
// opts.tp > 1 the model, made from the same seed in a tensor-parallel group,
// is split by its plan over mesh.tp and opts.reducer keeps the parts in step
// over mesh.dp (none when the data-parallel degree is 1). Throws
// VerificationError when the replicas of a data-parallel group differ
// afterwards, or a tensor-parallel group's replicated parameters or loss do.
// With opts.trace_path, rank 0 writes the run's timeline there (nodes and
// hosts from `topology`).
DdpBenchResult run_ddp_bench(const train::TrainOptions& opts, const launch::World& world,
                             const launch::Topology& topology, const layout::MeshComms& mesh,
                             const std::string& label);

// The per-run extras written beside the run record.
nlohmann::ordered_json run_extras_json(const DdpBenchResult& r);
// The "compression" object of the extras (also read back by compare).
nlohmann::ordered_json compression_json(const train::CompressionStats& c);

}  // namespace dtbench::bench
