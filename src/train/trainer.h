#pragma once
// The training loop: synthetic data, cross-entropy, an optimizer (momentum
// SGD or AdamW, train/optimizer.h), a data-parallel strategy (train/strategy.h), and per-iteration
// phase timings.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "models/model.h"
#include "train/compression.h"
#include "train/phase_times.h"
#include "trace/observer.h"
#include "train/train_options.h"

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::train {

class Pipeline;

struct TrainResult {
  // By the host clock; `total` ends once the device has finished the
  // iteration, the phases end when the host got past them (on a GPU the
  // host runs ahead, so most time shows where it waits: docs/metrics.md).
  PhaseTimes times;
  // --device cuda: the same phases by CUDA events on the compute stream
  // (total = their sum); empty on the CPU.
  PhaseTimes device_times;
  // Where it trained: device::describe ("CPU", "GPU 0 <name> (PCI ...)").
  std::string device;
  double last_loss = 0;
  // The strategy keeps the buffers in step (Strategy::sync_buffers): they
  // are rank 0's after train() returns, and the replica check compares them.
  bool buffers_in_step = false;
  // With opts.compression: what the compression did and the error it made,
  // measured on one extra untimed iteration after the timed ones.
  CompressionStats compression;
  std::vector<std::vector<size_t>> buckets;  // parameter indices per bucket (of the timed iterations)
  // Minor page faults of this process per timed iteration (mean): a row
  // whose allocator returns memory to the kernel each iteration shows
  // thousands here (core/allocator.h).
  double minor_faults_per_iter = 0;
  // This process's CPU seconds (user + system, every thread) per timed
  // iteration, and the host's steal seconds (core/cpu_time.h; -1 where not
  // reported) over the same iterations: beside the wall time they tell
  // work from waiting and from a virtual machine's lost time.
  double cpu_s_per_iter = 0;
  double host_steal_s_per_iter = -1;
  // --amp fp16: optimizer steps skipped for inf/nan gradients (warm-up
  // included) and the loss scale at the end; 0 otherwise.
  int64_t amp_skipped_steps = 0;
  double amp_final_scale = 0;
  // Memory of this rank (device/memory.h): tensor bytes at their peak over
  // the timed iterations (and the caching allocator's reserved peak on a
  // GPU, -1 on the CPU); the model state after the last step, counted from
  // the tensors held (each storage once: bucket views count their bucket);
  // the optimizer's states per parameter.
  int64_t peak_bytes = 0;
  int64_t reserved_peak_bytes = -1;
  // The process's resident-set peak over the timed iterations (VmHWM reset
  // after warm-up); -1 where the kernel does not allow the reset.
  int64_t peak_rss_bytes = -1;
  int64_t param_bytes = 0, grad_bytes = 0, optimizer_bytes = 0;
  int optimizer_states = 0;
  int64_t model_state_bytes() const { return param_bytes + grad_bytes + optimizer_bytes; }
};

// Builds the model named by opts.model with torch's RNG seeded by opts.seed,
// so every rank (and a reference process) starts from the same weights.
std::unique_ptr<models::Model> make_seeded_model(const TrainOptions& opts);

// The options opts.model is made with: its registry defaults, overridden by
// what opts sets (layers, width, heads, key/value heads, vocabulary, ...).
models::ModelOptions model_options(const TrainOptions& opts);

// One synthetic batch: rank `rank`'s slice of a global batch of
// world_size * batch_size examples drawn from opts.seed. A single process with
// batch world_size * batch_size sees exactly the union of the ranks' batches.
struct Batch {
  torch::Tensor input, target;
};
Batch make_batch(const TrainOptions& opts, models::InputKind kind, int world_size, int rank);

// Throws UsageError when this LibTorch cannot run `amp` on `device` (fp16 on
// the CPU with 1.13).
void check_amp_supported(const std::string& amp, const std::string& device);

// Intra-op threads for one rank: opts.threads, or cores / local ranks (>= 1).
int resolve_threads(int requested, int local_world_size);

// Called after every iteration (warm-up included): index from 0, total count.
using Progress = std::function<void(int iteration, int total, double seconds)>;

// Trains `model` for opts.warmup + opts.iters iterations; only the last
// opts.iters are timed (plus one untimed error-probe iteration with
// compression), on opts.device (model, batch and gradients there; NHWC with
// opts.channels_last). With opts.amp the forward and loss run under autocast
// (bfloat16 or float16; float16 with a dynamic loss scaler whose skipped steps
// are counted); gradients and the optimizer stay float32. `comm` may be null for reducer none. Collectives time
// out after comm->timeout(). Every iteration, phase, bucket launch and
// completion is reported to `observer` (--trace); with
// opts.inject_delay_rank == rank the rank sleeps opts.inject_delay_ms before
// each backward.
// With `pipeline` (--pp; train/pipeline.h) the step's forward and backward
// are the pipeline's schedule over its stages (`model` is not run; the
// strategy keeps pipeline->module() in step over `comm`, the data-parallel
// group of this stage), the phases are its compute, and comm_wait holds its
// waits; last_loss is the last stage's, on every rank.
TrainResult train(const TrainOptions& opts, models::Model& model, comm::Communicator* comm,
                  int world_size, int rank, const Progress& progress = {},
                  trace::TrainObserver& observer = trace::null_observer(), Pipeline* pipeline = nullptr);

}  // namespace dtbench::train
