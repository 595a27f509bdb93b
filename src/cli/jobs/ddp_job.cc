#include "cli/jobs/ddp_job.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "comm/factory.h"
#include "core/error.h"
#include "layout/pipeline_schedule.h"
#include "core/host_probe.h"
#include "core/log.h"
#include "core/units.h"
#include "device/device.h"
#include "launch/launcher.h"
#include "models/model.h"
#include "report/json_io.h"
#include "train/trainer.h"

namespace dtbench::cli {
namespace {

// The job's report: a fresh file (mkstemp: O_EXCL, a random name) that rank
// 0 replaces by rename (report::write_json_atomic writes its own temporary
// beside it the same way). std::filesystem's remove_all is not used here:
// the wheel's libtorch.so exports its own std::filesystem symbols, and
// calling them from this binary crashed (exit 139).
std::string temp_json_path() {
  const auto dir = std::filesystem::temp_directory_path();
  std::string templ = (dir / "dtbench-job-XXXXXX").string();
  const int fd = mkstemp(templ.data());
  if (fd < 0) throw IoError(fmt::format("cannot create a temporary file in {}: {}", dir.string(), std::strerror(errno)));
  close(fd);
  return templ;
}

}  // namespace

int sweep_threads(int requested, const std::vector<int>& world_sizes) {
  const int cores = usable_cores();
  int widest = 1;
  for (int w : world_sizes) widest = std::max(widest, w);
  const int threads = requested > 0 ? requested : threads_per_rank(widest);
  std::vector<int> sizes = world_sizes;
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  for (int w : sizes)
    if (static_cast<long long>(w) * threads > cores)
      log::warn(fmt::format(
          "{} rank(s) x {} intra-op thread(s) = {} threads on {} core(s): that row is "
          "oversubscribed and its times measure core sharing too",
          w, threads, static_cast<long long>(w) * threads, cores));
  return threads;
}

nlohmann::ordered_json train_config_json(const train::TrainOptions& t) {
  return {{"model", t.model},
          {"batch_size", t.batch_size},
          {"image_size", t.image_size},
          {"seq_len", t.seq_len},
          {"layers", t.layers},
          {"width", t.width},
          {"heads", t.heads},
          {"kv_heads", t.kv_heads},
          {"ffn_hidden_size", t.ffn_hidden_size},
          {"vocab", t.vocab},
          {"num_classes", t.num_classes},
          {"iters", t.iters},
          {"warmup", t.warmup},
          {"threads", t.threads},
          {"seed", t.seed},
          {"reducer", t.reducer},
          {"tp", t.tp},
          {"pp", t.pp},
          {"pp_schedule", t.pp > 1 ? t.pp_schedule : ""},
          {"microbatches", t.pp > 1 ? train::effective_microbatches(t) : 1},
          {"stages_per_rank", t.stages_per_rank},
          {"bucket_cap_mb", t.bucket_cap_mb},
          {"first_bucket_cap_mb", t.first_bucket_cap_mb},
          {"compression", t.compression},
          {"amp", t.amp},
          {"device", t.device},
          {"channels_last", t.channels_last},
          {"broadcast_buffers", t.broadcast_buffers},
          {"reshard_after_forward", t.reshard_after_forward != 0},  // fsdp's
          {"param_dtype", t.param_dtype.empty() ? std::string("float32") : t.param_dtype},  // fsdp's
          {"activation_checkpointing", t.activation_checkpointing},
          {"fusion_threshold_mb", t.fusion_threshold_mb},  // horovod's (-1: not horovod)
          {"cycle_time_ms", t.cycle_time_ms},
          {"optimizer", t.optimizer},
          {"lr", train::effective_lr(t)},
          {"momentum", train::effective_momentum(t)},
          {"weight_decay", train::effective_weight_decay(t)},
          {"peak_tflops", t.peak_tflops}};
}

std::vector<std::string> ddp_worker_args(const train::TrainOptions& t, const RunOptions& run,
                                         int world, const std::string& label,
                                         const std::string& out_json) {
  std::vector<std::string> a{launch::self_executable(), "ddp",
                             "--model", t.model,
                             "--batch-size", std::to_string(t.batch_size),
                             "--image-size", std::to_string(t.image_size),
                             "--seq-len", std::to_string(t.seq_len),
                             "--layers", std::to_string(t.layers),
                             "--width", std::to_string(t.width),
                             "--heads", std::to_string(t.heads),
                             "--kv-heads", std::to_string(t.kv_heads),
                             "--ffn-hidden-size", std::to_string(t.ffn_hidden_size),
                             "--vocab", std::to_string(t.vocab),
                             "--num-classes", std::to_string(t.num_classes),
                             "--iters", std::to_string(t.iters),
                             "--warmup", std::to_string(t.warmup),
                             "--threads", std::to_string(t.threads),
                             "--seed", std::to_string(t.seed),
                             "--reducer", t.reducer,
                             "--bucket-cap-mb", fmt::format("{}", t.bucket_cap_mb),
                             "--first-bucket-cap-mb", fmt::format("{}", t.first_bucket_cap_mb),
                             "--compression", t.compression,
                             "--optimizer", t.optimizer,
                             "--peak-tflops", fmt::format("{}", t.peak_tflops),
                             "--backend", run.comm.backend,
                             "--timeout", run.timeout_text,
                             "--world-sizes", std::to_string(world),
                             "--run-json", out_json,
                             "--label", label};
  // Only what the user gave: the workers fill in the same defaults.
  if (t.lr > 0) a.insert(a.end(), {"--lr", fmt::format("{}", t.lr)});
  if (t.momentum != -1) a.insert(a.end(), {"--momentum", fmt::format("{}", t.momentum)});
  if (t.weight_decay != -1) a.insert(a.end(), {"--weight-decay", fmt::format("{}", t.weight_decay)});
  a.push_back("--amp");
  a.push_back(t.amp);
  a.push_back("--device");
  a.push_back(t.device);
  if (t.channels_last) a.push_back("--channels-last");
  if (!t.trace_path.empty()) {
    a.insert(a.end(), {"--trace", t.trace_path, "--trace-iters", std::to_string(t.trace_iters)});
  }
  if (!t.torch_profiler_path.empty()) {
    a.insert(a.end(), {"--torch-profiler", t.torch_profiler_path, "--trace-iters", std::to_string(t.trace_iters)});
  }
  if (t.inject_delay_rank >= 0)
    a.insert(a.end(), {"--inject-delay", fmt::format("{}:{}", t.inject_delay_rank, t.inject_delay_ms)});
  a.insert(a.end(), {"--broadcast-buffers", t.broadcast_buffers ? "true" : "false"});
  if (t.fusion_threshold_mb != -1)
    a.insert(a.end(), {"--fusion-threshold-mb", fmt::format("{}", t.fusion_threshold_mb)});
  if (t.cycle_time_ms != -1) a.insert(a.end(), {"--cycle-time-ms", fmt::format("{}", t.cycle_time_ms)});
  if (t.reshard_after_forward != -1)
    a.insert(a.end(), {"--reshard-after-forward", t.reshard_after_forward ? "true" : "false"});
  if (!t.param_dtype.empty()) a.insert(a.end(), {"--param-dtype", t.param_dtype});
  if (t.tp != 1) a.insert(a.end(), {"--tp", std::to_string(t.tp)});
  if (t.pp != 1) {
    a.insert(a.end(), {"--pp", std::to_string(t.pp), "--pp-schedule", t.pp_schedule, "--stages-per-rank",
                       std::to_string(t.stages_per_rank)});
    if (t.microbatches > 0) a.insert(a.end(), {"--microbatches", std::to_string(t.microbatches)});
  }
  if (t.activation_checkpointing != "none")
    a.insert(a.end(), {"--activation-checkpointing", t.activation_checkpointing});
  if (!run.comm.iface.empty()) {
    a.push_back("--iface");
    a.push_back(run.comm.iface);
  }
  return a;
}

DdpJobOutcome run_ddp_job(const train::TrainOptions& t, const RunOptions& run, int world,
                          const std::string& label) {
  const std::string tmp = temp_json_path();
  DdpJobOutcome out;
  try {
    out.status = launch_workers(world, run.comm.backend, run.bind, ddp_worker_args(t, run, world, label, tmp));
    if (out.status == 0) out.record = report::read_json_file(tmp);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  std::remove(tmp.c_str());
  return out;
}

void check_trainable(const train::TrainOptions& t, const std::string& backend) {
  check_train_flags(t, backend);
  train::check_amp_supported(t.amp, t.device);
  device::check_available(t.device, 1);
  const auto& entry = models::find_model(t.model);
  if (t.channels_last && entry.input != models::InputKind::kImage)
    throw UsageError(fmt::format("--channels-last applies to image models (4-D inputs); {} is not one",
                                 entry.name));
  if (t.tp > 1) {
    const auto why = models::tp_refusal(entry, train::model_options(t), t.tp);
    if (!why.empty()) throw UsageError(why);
  }
  if (t.pp > 1) {
    const auto m = train::model_options(t);
    if (!entry.unit_shapes)  // the decoders: the ones with a pipeline split
      throw UsageError(fmt::format("--pp {}: {} has no pipeline split (gpt and llama models have)", t.pp, entry.name));
    const auto why = layout::pipeline_refusal(layout::parse_pp_schedule(t.pp_schedule), t.pp,
                                              train::effective_microbatches(t), t.stages_per_rank, t.batch_size,
                                              m.layers);
    if (!why.empty()) throw UsageError(why);
  }
  if (const auto why = models::recompute_refusal(entry, t.activation_checkpointing); !why.empty())
    throw UsageError(why);
  if (t.ffn_hidden_size > 0 && !entry.sets_ffn_hidden)
    throw UsageError(fmt::format("--ffn-hidden-size sets a Llama's feed-forward width; {}'s is fixed", entry.name));
  if (t.image_size < entry.min_image_size)
    throw UsageError(fmt::format("--image-size {}: {} needs images of at least {}x{}", t.image_size,
                                 entry.name, entry.min_image_size, entry.min_image_size));
}

}  // namespace dtbench::cli
