#pragma once
// Records of `dtbench ddp`: one DdpRun per row of the table (the "no ddp"
// baseline, then one per world size). Torch-free; filled by bench/ddp,
// written and read by the reporters and `dtbench diff`.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtbench::report {

// Per-iteration seconds of one rank, timed iterations only.
struct RankSamples {
  int rank = 0;
  int node = 0;
  std::string cpus;               // CPUs it could run on ("0-3"), "" if not recorded
  std::vector<double> forward;    // forward + loss (+ buffer broadcast, bucket rebuild)
  std::vector<double> backward;   // loss.backward() (ddp: includes its reduction wait)
  std::vector<double> comm_wait;  // exposed communication after backward
  std::vector<double> optimizer;  // optimizer step + zero_grad
  std::vector<double> total;      // the whole iteration
  // --device cuda: the same phases as the GPU spent them, by CUDA events on
  // the rank's compute stream (compare_ddp.py's way); empty on the CPU.
  struct Device {
    std::vector<double> forward, backward, comm_wait, optimizer, total;
  } device;
};

struct DdpRun {
  std::string label;        // "no ddp", "1N/2R", ...
  std::string reducer;      // none, ddp, overlap, sync, allreduce-after-backward
  int world_size = 1;
  int nodes = 1;
  // Examples per data-parallel replica per iteration (--batch-size): per
  // rank when tp is 1; the tp ranks of a tensor-parallel group train one
  // replica's batch together.
  std::int64_t batch_per_rank = 0;
  // Tensor-parallel degree (--tp): ranks per model replica; the
  // data-parallel degree is world_size / tp. Per-rank throughput and
  // TFLOP/s divide by it (torchtitan's non-data-parallel divisor).
  int tp = 1;
  // Pipeline-parallel degree (--pp): a replica is tp · pp ranks.
  int pp = 1;
  // hex; equal on every rank of a data-parallel group (checked before the run
  // is recorded): with tp > 1 rank 0's part of the model.
  std::string param_hash;
  int threads = 0;          // intra-op threads per rank (0: not recorded, reports before v0.2)
  std::string malloc;       // allocator settings the row ran with (core/allocator.h); "" if not recorded
  double train_flops_per_example = 0;  // 6 x forward multiply-adds (train/flops.h); 0 = not measured
  double peak_tflops = 0;              // per rank, from --peak-tflops; 0 = not given
  std::int64_t tokens_per_example = 0;  // token models (--seq-len); 0 = not a token model
  // Memory per rank, the most over the ranks (-1 = not recorded: reports
  // before memory figures). peak_bytes: tensor bytes at their peak during the
  // timed iterations, from the allocator (device/memory.h: LibTorch's CPU
  // allocator counted by dtbench, or the CUDA caching allocator's
  // max allocated). model_state_bytes: parameters + gradients + optimizer
  // state, counted from the tensors a rank holds; model_state_expected_bytes:
  // what the strategy's formula gives for them (float32, K optimizer states
  // per parameter: replicated (8 + 4K) x parameters).
  std::int64_t peak_bytes = -1;
  // The ranks' largest resident-set peak over the timed iterations (the
  // whole process: LibTorch, buffers, the allocator's cached memory); -1 =
  // not recorded.
  std::int64_t peak_rss_bytes = -1;
  std::int64_t model_state_bytes = -1;
  std::int64_t model_state_expected_bytes = -1;
  std::vector<RankSamples> ranks;

  int dp() const { return world_size / (tp * pp); }
  std::int64_t global_batch() const { return batch_per_rank * dp(); }
  // Examples each rank trains per iteration: batch_per_rank / (tp · pp).
  double examples_per_rank() const { return static_cast<double>(batch_per_rank) / (tp * pp); }
};

// The phases in report order, and their JSON keys.
inline const char* const kPhaseNames[] = {"forward", "backward", "comm_wait", "optimizer", "total"};
const std::vector<double>& phase(const RankSamples& r, const std::string& name);
const std::vector<double>& device_phase(const RankSamples& r, const std::string& name);

// Seconds per iteration as PyTorch's DDP benchmark (benchmark.py) reports
// them: every rank's timed iterations pooled into one sample ("aggregate
// measurements for better estimation of percentiles"). The table's
// sec/iter and ex/sec columns.
std::vector<double> pooled_times(const DdpRun& run);
// Seconds per iteration of the job: for each timed iteration the slowest
// rank's total (an iteration ends when every rank has finished it). The
// straggler-honest figure: its own column, and what projections, MFU and the
// job's throughput use.
std::vector<double> slowest_rank_times(const DdpRun& run);
// The same for one phase; "backward+comm_wait" sums the two per rank first
// (backward including its exposed communication).
std::vector<double> phase_times(const DdpRun& run, const std::string& phase_name);
// True when every rank recorded its phases by CUDA events (--device cuda).
bool has_device_phases(const DdpRun& run);
// phase_times from the CUDA-event phases (empty when not recorded).
std::vector<double> device_phase_times(const DdpRun& run, const std::string& phase_name);

// Examples per second per rank, one per timed iteration: examples_per_rank /
// the iteration's time (slowest rank).
std::vector<double> per_rank_throughput(const DdpRun& run);

// The job's examples per second at a percentile of slowest_rank_times:
// global_batch / that time (0 when the time is 0).
double job_examples_per_sec(const DdpRun& run, double percentile);

// Training TFLOP/s each rank achieved at the p50 iteration time:
// examples_per_rank x train_flops_per_example / p50 / 1e12 (0 when not measured).
double achieved_tflops_per_rank(const DdpRun& run);
// Tokens per second per rank at the p50 iteration (token models; 0 otherwise).
double tokens_per_sec_per_rank(const DdpRun& run);
// achieved / peak_tflops, 0 when either is unknown.
double model_flops_utilization(const DdpRun& run);

// (max - min) / min of the ranks' p50 total times, in percent; 0 for one rank.
double rank_p50_spread_percent(const DdpRun& run);

// One node's share of a run: its ranks' slowest total and exposed
// communication per iteration (p50), and the examples/s of its ranks.
struct NodeFigures {
  int node = 0;
  std::vector<int> ranks;
  double p50_total = 0;      // seconds
  double p50_comm_wait = 0;  // seconds
  double examples_per_sec = 0;
};
// One entry per node that has ranks, in node order.
std::vector<NodeFigures> per_node_figures(const DdpRun& run);

// Parses percentiles "50,75,90" into {50, 75, 90}. Throws UsageError for
// values outside [0, 100] or malformed lists.
std::vector<double> parse_percentiles(const std::string& text, const std::string& flag);

nlohmann::ordered_json to_json(const DdpRun& run);
// Throws UsageError (naming `where`) when the JSON does not hold a valid run.
DdpRun ddp_run_from_json(const nlohmann::ordered_json& j, const std::string& where);

}  // namespace dtbench::report
