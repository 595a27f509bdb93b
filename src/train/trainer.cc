#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>
#include <torch/torch.h>

#include "comm/communicator.h"
#include "compat/amp_compat.h"
#include "compat/train_compat.h"
#include "core/allocator.h"
#include "core/cpu_time.h"
#include "core/error.h"
#include "core/host_probe.h"
#include "device/device.h"
#include "device/memory.h"
#include "train/strategy.h"
#include "train/grad_ready_probe.h"
#include "train/loss_scaler.h"
#include "train/optimizer.h"
#include "train/pipeline.h"

namespace dtbench::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

models::ModelOptions model_options(const TrainOptions& o) {
  models::ModelOptions m = models::find_model(o.model).defaults;
  m.num_classes = o.num_classes;
  m.seq_len = o.seq_len;
  if (o.layers > 0) m.layers = o.layers;
  if (o.width > 0) {
    m.width = o.width;
    m.hidden = o.width;
  }
  if (o.heads > 0) m.heads = o.heads;
  if (o.kv_heads > 0) m.kv_heads = o.kv_heads;
  // A preset's feed-forward keeps its ratio to the width (llama3-405b's
  // 3.25) when the width changes and --ffn-hidden-size is not given.
  const auto& preset = models::find_model(o.model).defaults;
  if (o.width > 0 && preset.ffn_hidden > 0 && o.width != preset.width)
    m.ffn_hidden = preset.ffn_hidden * o.width / preset.width;
  if (o.ffn_hidden_size > 0) m.ffn_hidden = o.ffn_hidden_size;
  if (o.vocab > 0) m.vocab = o.vocab;
  return m;
}

namespace {

// Forward under the device's autocast while alive: bfloat16 (keeps
// float32's range, no scaler needed) or float16 (with the loss scaler in
// train()).
class AutocastScope {
 public:
  AutocastScope(const std::string& amp, const c10::Device& device)
      : on_(amp != "none"), cuda_(device.is_cuda()), dtype_(amp == "fp16" ? at::kHalf : at::kBFloat16) {
    set(true);
  }
  ~AutocastScope() { set(false); }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  void set(bool enabled) {
    if (!on_) return;
    if (cuda_)
      compat::set_cuda_autocast(enabled, dtype_);
    else
      compat::set_cpu_autocast(enabled, dtype_);
  }
  bool on_, cuda_;
  at::ScalarType dtype_;
};

// --activation-checkpointing on the model's units (models/units.h); a model
// without units (or, for selective, without attention) is refused.
void apply_recompute(const TrainOptions& opts, models::Model& model) {
  const auto mode = models::parse_recompute(opts.activation_checkpointing);
  auto* seam = model.unit_seam();
  if (seam == nullptr) {
    if (mode == models::Recompute::kNone) return;
    throw UsageError(fmt::format("--activation-checkpointing {}: {} has no blocks to checkpoint (gpt, llama, "
                                 "resnet and mlp models have)", opts.activation_checkpointing, opts.model));
  }
  const auto why = seam->set_recompute(mode);
  if (!why.empty())
    throw UsageError(fmt::format("--activation-checkpointing {}: {}: {}", opts.activation_checkpointing, opts.model, why));
}

// Moves the model to `device`; with channels_last, every 4-D parameter
// (convolution weights) is laid out NHWC, as torch's
// module.to(memory_format=torch.channels_last) does.
void place_model(torch::nn::Module& module, const c10::Device& device, bool channels_last) {
  module.to(device);
  if (!channels_last) return;
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters())
    if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
}

}  // namespace

std::unique_ptr<models::Model> make_seeded_model(const TrainOptions& opts) {
  torch::manual_seed(opts.seed);
  return models::make_model(opts.model, model_options(opts));
}

Batch make_batch(const TrainOptions& opts, models::InputKind kind, int world_size, int rank) {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(opts.seed + 0x5eed);
  const int64_t global = opts.batch_size * world_size;
  const auto mo = model_options(opts);
  Batch b;
  switch (kind) {
    case models::InputKind::kImage:
      b.input = torch::randn({global, 3, opts.image_size, opts.image_size}, gen, torch::kFloat);
      b.target = torch::randint(0, mo.num_classes, {global}, gen, torch::kLong);
      break;
    case models::InputKind::kTokens:
      b.input = torch::randint(0, mo.vocab, {global, opts.seq_len}, gen, torch::kLong);
      b.target = torch::randint(0, mo.vocab, {global, opts.seq_len}, gen, torch::kLong);
      break;
    case models::InputKind::kVector:
      b.input = torch::randn({global, mo.in_features}, gen, torch::kFloat);
      b.target = torch::randint(0, mo.num_classes, {global}, gen, torch::kLong);
      break;
  }
  b.input = b.input.narrow(0, rank * opts.batch_size, opts.batch_size).contiguous();
  b.target = b.target.narrow(0, rank * opts.batch_size, opts.batch_size).contiguous();
  return b;
}

void check_amp_supported(const std::string& amp, const std::string& device) {
  if (amp == "fp16" && device == "cpu" && !compat::cpu_autocast_has_float16())
    throw UsageError(fmt::format(
        "--amp fp16: LibTorch {}'s CPU autocast has only bfloat16 (float16 needs LibTorch >= 2.4: "
        "the wheel build, make TORCH=wheel); use --amp bf16 (or --device cuda)",
        compat::torch_version()));
}

int resolve_threads(int requested, int local_world_size) {
  return requested > 0 ? requested : threads_per_rank(local_world_size);
}

namespace {

// Parameters, gradients and optimizer state this rank holds, each storage
// counted once: the module's parameters and what the optimizer steps (the
// same tensors, or shards of the flat buckets the parameters are views of),
// and their gradients (the own strategies' are views of their buckets).
void count_model_state(const std::vector<torch::Tensor>& params,
                       const std::vector<torch::Tensor>& stepped, const Optimizer& optimizer,
                       TrainResult& r) {
  std::unordered_set<const void*> seen;
  auto bytes = [&seen](const torch::Tensor& t) -> int64_t {
    if (!t.defined()) return 0;
    const auto& st = t.storage();
    return seen.insert(st.data()).second ? static_cast<int64_t>(st.nbytes()) : 0;
  };
  r.param_bytes = r.grad_bytes = 0;
  for (const auto* list : {&params, &stepped})
    for (const auto& p : *list) r.param_bytes += bytes(p);
  for (const auto* list : {&params, &stepped})
    for (const auto& p : *list) r.grad_bytes += bytes(p.grad());
  r.optimizer_bytes = optimizer.state_bytes();
  r.optimizer_states = optimizer.states_per_parameter();
}

TrainResult train_impl(const TrainOptions& opts, models::Model& model, comm::Communicator* comm,
                       int world_size, int rank, const Progress& progress,
                       trace::TrainObserver& observer, Pipeline* pipeline) {
  check_amp_supported(opts.amp, opts.device);
  if (opts.channels_last && model.input_kind() != models::InputKind::kImage)
    throw UsageError(fmt::format("--channels-last applies to image models (4-D inputs); {} is not one",
                                 opts.model));
  const c10::Device device = device::select(opts.device, opts.device_index);
  auto& module = pipeline != nullptr ? pipeline->module() : *model.module();
  module.train();
  place_model(module, device, opts.channels_last);
  if (pipeline != nullptr) {
    for (auto* chunk : pipeline->chunks()) apply_recompute(opts, *chunk);
  } else {
    apply_recompute(opts, model);
  }
  auto strategy = make_strategy(opts, module, comm, observer, pipeline != nullptr ? nullptr : model.unit_seam());
  // After the strategy (see grad_ready_probe.h): its hooks go first.
  std::unique_ptr<GradReadyProbe> ready_probe;
  if (observer.active()) ready_probe = std::make_unique<GradReadyProbe>(module.parameters(), observer);
  auto batch = make_batch(opts, model.input_kind(), world_size, rank);
  batch.input = batch.input.to(device);
  batch.target = batch.target.to(device);
  if (opts.channels_last) batch.input = batch.input.contiguous(at::MemoryFormat::ChannelsLast);
  auto timer = device::make_phase_timer(device);
  const auto stepped = strategy->optimizer_parameters();
  auto optimizer = make_optimizer(opts, stepped);
  const auto memory = device::make_memory_meter(device);

  TrainResult result;
  result.device = device::describe(device);
  result.buckets = strategy->buckets();
  auto& t = result.times;
  const int total_iters = opts.warmup + opts.iters;
  const bool probe = opts.compression != "none";
  const auto params = module.parameters();
  std::unique_ptr<LossScaler> scaler;
  if (opts.amp == "fp16") scaler = std::make_unique<LossScaler>(LossScalerOptions{}, params.front().device());
  std::int64_t faults_at_start = 0;
  double cpu_at_start = 0, steal_at_start = -1;
  bool rss_reset = false;
  const bool delayed = opts.inject_delay_rank == rank && opts.inject_delay_ms > 0;
  const auto delay = std::chrono::duration<double, std::milli>(opts.inject_delay_ms);
  for (int it = 0; it < total_iters + (probe ? 1 : 0); ++it) {
    const bool probing = it == total_iters;
    if (probing) strategy->set_compression_probe(true);
    if (it == opts.warmup) {
      faults_at_start = alloc::minor_faults();
      cpu_at_start = process_cpu_seconds();
      steal_at_start = host_steal_seconds();
      memory->reset_peak();
      rss_reset = alloc::reset_peak_rss();
    }
    const auto t0 = Clock::now();
    observer.iteration_begin(it);
    timer->start();
    strategy->before_forward();
    torch::Tensor loss;
    if (pipeline != nullptr) {
      if (delayed) {
        trace::PhaseScope phase(observer, trace::Phase::kDelay);
        std::this_thread::sleep_for(delay);
      }
      AutocastScope autocast(opts.amp, device);
      loss = pipeline->run(batch.input, batch.target, observer);
      timer->mark();
    } else {
      {
        trace::PhaseScope phase(observer, trace::Phase::kForward);
        AutocastScope autocast(opts.amp, device);
        loss = model.training_loss(batch.input, batch.target).to(torch::kFloat);
      }
      const auto scaled = scaler ? scaler->scale(loss) : loss;
      if (delayed) {
        // --inject-delay: timed as part of this rank's forward phase.
        trace::PhaseScope phase(observer, trace::Phase::kDelay);
        std::this_thread::sleep_for(delay);
      }
      strategy->before_backward(scaled);
      timer->mark();
      {
        trace::PhaseScope phase(observer, trace::Phase::kBackward);
        scaled.backward();
      }
    }
    timer->mark();
    {
      trace::PhaseScope phase(observer, trace::Phase::kCommWait);
      strategy->finish_backward();
    }
    timer->mark();
    {
      trace::PhaseScope phase(observer, trace::Phase::kOptimizer);
      // Every rank unscales the same averaged gradients, so all skip together.
      const bool skip = scaler && scaler->unscale(stepped);
      if (!skip) strategy->step(*optimizer);
      if (scaler) scaler->update();
      if (it + 1 == total_iters) count_model_state(params, stepped, *optimizer, result);
      strategy->zero_grad(*optimizer);
    }
    timer->mark();
    // On a GPU this waits for the device to finish the iteration.
    auto phases = timer->finish();
    const auto t4 = Clock::now();
    observer.iteration_end(it);
    if (pipeline != nullptr) {
      // The schedule's span splits into its forwards' and backwards'
      // compute (the injected delay counted in forward, as without a
      // pipeline) and its waits, which join the strategy's exposed time.
      const auto& st = pipeline->last_step();
      const double span = phases.host[0] + phases.host[1];
      const double forward = st.forward_s + (delayed ? opts.inject_delay_ms / 1e3 : 0.0);
      phases.host[0] = forward;
      phases.host[1] = st.backward_s;
      phases.host[2] += std::max(0.0, span - forward - st.backward_s);
      phases.device.clear();  // the CUDA events would split the span, not the phases
    }
    // Under a pipeline only the last stage has the loss.
    if (loss.defined()) result.last_loss = loss.item<double>();
    if (!std::isfinite(result.last_loss))
      throw VerificationError(
          fmt::format("loss became {} at iteration {}: the training diverged", result.last_loss, it));
    if (probing) {
      strategy->set_compression_probe(false);
      continue;
    }
    if (it >= opts.warmup) {
      t.forward.push_back(phases.host[0]);
      t.backward.push_back(phases.host[1]);
      t.comm_wait.push_back(phases.host[2]);
      t.optimizer.push_back(phases.host[3]);
      t.total.push_back(seconds(t0, t4));
      if (!phases.device.empty()) {
        auto& d = result.device_times;
        d.forward.push_back(phases.device[0]);
        d.backward.push_back(phases.device[1]);
        d.comm_wait.push_back(phases.device[2]);
        d.optimizer.push_back(phases.device[3]);
        d.total.push_back(phases.device[0] + phases.device[1] + phases.device[2] + phases.device[3]);
      }
    }
    if (it + 1 == total_iters && opts.iters > 0) {
      result.minor_faults_per_iter =
          static_cast<double>(alloc::minor_faults() - faults_at_start) / opts.iters;
      result.cpu_s_per_iter = (process_cpu_seconds() - cpu_at_start) / opts.iters;
      const double steal = host_steal_seconds();
      if (steal >= 0 && steal_at_start >= 0) result.host_steal_s_per_iter = (steal - steal_at_start) / opts.iters;
      const auto m = memory->read();
      result.peak_bytes = m.peak;
      result.reserved_peak_bytes = m.reserved_peak;
      result.peak_rss_bytes = rss_reset ? alloc::peak_rss_bytes() : -1;
    }
    if (progress) progress(it, total_iters, seconds(t0, t4));
  }
  strategy->finish();
  if (pipeline != nullptr) result.last_loss = pipeline->share_loss(result.last_loss);
  result.buffers_in_step = strategy->sync_buffers();
  // The buckets of the timed iterations: ddp's Reducer rebuilds its split
  // after the first iteration, horovod's fused groups are known once an
  // iteration ran (the last one's).
  result.buckets = strategy->buckets();
  result.compression = strategy->compression_stats();
  if (scaler) {
    result.amp_skipped_steps = scaler->skipped_steps();
    result.amp_final_scale = scaler->current_scale();
  }
  return result;
}

}  // namespace

TrainResult train(const TrainOptions& opts, models::Model& model, comm::Communicator* comm,
                  int world_size, int rank, const Progress& progress,
                  trace::TrainObserver& observer, Pipeline* pipeline) {
  try {
    return train_impl(opts, model, comm, world_size, rank, progress, observer, pipeline);
  } catch (...) {
    if (!comm) throw;
    // The c10d::Reducer drives the backend itself: its timeouts and lost
    // peers arrive here as raw backend errors. Named like the communicator's
    // own (with the cause a launcher published: which rank died or stopped).
    std::rethrow_exception(comm->explain_failure(
        std::current_exception(), fmt::format("{} (reducer {})", comm->backend(), opts.reducer)));
  }
}

}  // namespace dtbench::train
