#include "train/train_options.h"

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "layout/pipeline_schedule.h"

namespace dtbench::train {

double effective_lr(const TrainOptions& o) {
  if (o.lr > 0) return o.lr;
  return 1e-3;  // torch.optim.AdamW's default; benchmark.py's SGD lr
}

double effective_momentum(const TrainOptions& o) {
  if (o.optimizer != "sgd") return 0;
  return o.momentum == -1 ? 0.9 : o.momentum;
}

double effective_weight_decay(const TrainOptions& o) {
  if (o.weight_decay != -1) return o.weight_decay;
  return o.optimizer == "adamw" ? 0.01 : 1e-4;
}

int effective_microbatches(const TrainOptions& o) {
  return o.microbatches > 0 ? o.microbatches : static_cast<int>(o.batch_size);
}

std::string pipeline_reducer_refusal(const TrainOptions& o) {
  if (o.pp == 1 || reducer_takes_pipeline(o.reducer)) return "";
  return fmt::format(
      "--pp {} with --reducer {} over data-parallel replicas: it reduces during each backward, and a pipeline runs "
      "one backward per microbatch; use sync, allreduce-after-backward or zero1 (they reduce the accumulated "
      "gradients once)",
      o.pp, o.reducer);
}

bool reducer_takes_pipeline(const std::string& reducer) {
  return reducer == "none" || reducer == "sync" || reducer == "allreduce-after-backward" || reducer == "zero1";
}

int optimizer_states(const TrainOptions& o) {
  if (o.optimizer == "adamw") return 2;
  return effective_momentum(o) == 0 ? 0 : 1;
}

void validate(const TrainOptions& o) {
  if (o.model.empty()) throw UsageError("--model: empty model name");
  if (o.amp != "none" && o.amp != "bf16" && o.amp != "fp16")
    throw UsageError(fmt::format("--amp '{}' is not one of bf16 (the default of a bare --amp), fp16", o.amp));
  if (o.device != "cpu" && o.device != "cuda")
    throw UsageError(fmt::format("--device '{}' must be cpu or cuda", o.device));
  if (o.batch_size < 1 || o.batch_size > (1 << 20))
    throw UsageError(fmt::format("--batch-size {} must be between 1 and 1048576", o.batch_size));
  if (o.image_size < 8 || o.image_size > 4096)
    throw UsageError(fmt::format("--image-size {} must be between 8 and 4096", o.image_size));
  if (o.seq_len < 1 || o.seq_len > 65536)
    throw UsageError(fmt::format("--seq-len {} must be between 1 and 65536", o.seq_len));
  if (o.layers < 0 || o.layers > 1000)
    throw UsageError(fmt::format("--layers {} must be between 0 (model default) and 1000", o.layers));
  if (o.heads < 0 || o.heads > 4096)
    throw UsageError(fmt::format("--heads {} must be between 0 (model default) and 4096", o.heads));
  if (o.ffn_hidden_size < 0 || o.ffn_hidden_size > (int64_t{1} << 22))
    throw UsageError(fmt::format("--ffn-hidden-size {} must be between 0 (model default) and 4194304",
                                 o.ffn_hidden_size));
  if (o.kv_heads < 0 || o.kv_heads > 4096)
    throw UsageError(fmt::format("--kv-heads {} must be between 0 (model default) and 4096", o.kv_heads));
  if (o.vocab != 0 && (o.vocab < 2 || o.vocab > (1 << 24)))
    throw UsageError(fmt::format("--vocab {} must be between 2 and 16777216 (0: model default)", o.vocab));
  if (o.width < 0 || o.width > (1 << 20))
    throw UsageError(fmt::format("--width {} must be between 0 (model default) and 1048576", o.width));
  if (o.num_classes < 2 || o.num_classes > 1000000)
    throw UsageError(fmt::format("--num-classes {} must be between 2 and 1000000", o.num_classes));
  if (o.tp < 1 || o.tp > 1024) throw UsageError(fmt::format("--tp {} must be between 1 and 1024", o.tp));
  if (o.pp < 1 || o.pp > 1024) throw UsageError(fmt::format("--pp {} must be between 1 and 1024", o.pp));
  if (o.microbatches < 0 || o.microbatches > 65536)
    throw UsageError(fmt::format("--microbatches {} must be between 1 and 65536", o.microbatches));
  if (o.stages_per_rank < 1 || o.stages_per_rank > 1024)
    throw UsageError(fmt::format("--stages-per-rank {} must be between 1 and 1024", o.stages_per_rank));
  if (o.pp == 1 && (o.microbatches > 0 || o.stages_per_rank > 1 || o.pp_schedule != "1f1b"))
    throw UsageError("--microbatches, --pp-schedule and --stages-per-rank order a pipeline's microbatches: give --pp");
  if (o.pp > 1) {
    const auto schedule = layout::parse_pp_schedule(o.pp_schedule);
    const auto why = layout::pipeline_refusal(schedule, o.pp, effective_microbatches(o), o.stages_per_rank,
                                              o.batch_size, -1);
    if (!why.empty()) throw UsageError(why);
    if (o.device != "cpu")
      throw UsageError(fmt::format("--pp {} with --device {}: the pipeline runs on the CPU only for now (its "
                                   "transfers over NCCL are not ordered per peer pair yet)", o.pp, o.device));
    if (o.amp == "fp16")
      throw UsageError(fmt::format("--amp fp16 with --pp {}: the loss scaler would need every stage's inf/nan check "
                                   "agreed, which dtbench does not do yet; use --amp bf16", o.pp));
    if (o.compression != "none")
      throw UsageError(fmt::format("--compression with --pp {}: not supported yet (the data-parallel reduce of a "
                                   "pipeline stage runs in float32)", o.pp));
  }
  if (o.iters < 1) throw UsageError(fmt::format("--iters {} must be at least 1", o.iters));
  if (o.warmup < 0) throw UsageError(fmt::format("--warmup {} must not be negative", o.warmup));
  if (!(o.peak_tflops >= 0) || o.peak_tflops > 1e6)
    throw UsageError(fmt::format("--peak-tflops {} must be between 0 (not given) and 1e6", o.peak_tflops));
  if (o.threads < 0 || o.threads > 1024)
    throw UsageError(fmt::format("--threads {} must be between 0 (auto) and 1024", o.threads));
  if (!(o.bucket_cap_mb > 0) || o.bucket_cap_mb > 65536)
    throw UsageError(fmt::format("--bucket-cap-mb {} must be > 0 and at most 65536", o.bucket_cap_mb));
  if (!(o.first_bucket_cap_mb > 0) || o.first_bucket_cap_mb > 65536)
    throw UsageError(
        fmt::format("--first-bucket-cap-mb {} must be > 0 and at most 65536", o.first_bucket_cap_mb));
  if (o.optimizer != "sgd" && o.optimizer != "adamw")
    throw UsageError(fmt::format("--optimizer '{}' is not one of sgd, adamw", o.optimizer));
  if (!(o.lr >= 0) || o.lr > 1e3)
    throw UsageError(fmt::format("--lr {} must be positive and at most 1000 (0: the optimizer's default)", o.lr));
  if (o.momentum != -1 && !(o.momentum >= 0 && o.momentum < 1))
    throw UsageError(fmt::format("--momentum {} must be in [0, 1)", o.momentum));
  if (o.momentum != -1 && o.optimizer != "sgd")
    throw UsageError(fmt::format("--momentum is SGD's; --optimizer {} has betas (0.9, 0.999)", o.optimizer));
  if (o.weight_decay != -1 && !(o.weight_decay >= 0 && o.weight_decay <= 1))
    throw UsageError(fmt::format("--weight-decay {} must be between 0 and 1", o.weight_decay));
  if (!o.trace_path.empty() && !o.torch_profiler_path.empty())
    throw UsageError("--trace and --torch-profiler: choose one (each would time the other's work)");
  if (o.trace_iters < 1 || o.trace_iters > 1000)
    throw UsageError(fmt::format("--trace-iters {} must be between 1 and 1000", o.trace_iters));
  if (o.inject_delay_rank >= 0 && !(o.inject_delay_ms >= 0 && o.inject_delay_ms <= 600000))
    throw UsageError(fmt::format("--inject-delay: {} ms must be between 0 and 600000", o.inject_delay_ms));
  bool known = false;
  for (const char* r : kReducerNames) known = known || o.reducer == r;
  if (!known) throw UsageError(fmt::format("--reducer '{}' is not one of {}", o.reducer, reducer_names()));
  known = false;
  for (const char* c : kCompressionNames) known = known || o.compression == c;
  if (!known)
    throw UsageError(fmt::format("--compression '{}' is not one of none, fp16, bf16", o.compression));
  if (o.compression != "none" && !reducer_supports_compression(o.reducer))
    throw UsageError(fmt::format(
        "--compression {} is done by dtbench's own replicated reducers (overlap, sync, "
        "allreduce-after-backward) and horovod (fp16); --reducer {} reduces in float32",
        o.compression, o.reducer));
  if ((o.fusion_threshold_mb != -1 || o.cycle_time_ms != -1) && o.reducer != "horovod")
    throw UsageError(fmt::format(
        "--fusion-threshold-mb and --cycle-time-ms are horovod's (Horovod's tensor fusion); "
        "--reducer {} has buckets (--bucket-cap-mb)",
        o.reducer));
  if (o.fusion_threshold_mb != -1 && !(o.fusion_threshold_mb >= 0 && o.fusion_threshold_mb <= 65536))
    throw UsageError(fmt::format("--fusion-threshold-mb {} must be between 0 (no fusion) and 65536",
                                 o.fusion_threshold_mb));
  if (o.cycle_time_ms != -1 && !(o.cycle_time_ms >= 0 && o.cycle_time_ms <= 10000))
    throw UsageError(fmt::format("--cycle-time-ms {} must be between 0 and 10000", o.cycle_time_ms));
  if (o.reducer == "horovod" && o.compression == "bf16")
    throw UsageError("--compression bf16 with --reducer horovod: Horovod 0.28's compressions are none "
                     "and fp16 (hvd.Compression)");
  if (o.reshard_after_forward != -1 && o.reducer != "fsdp")
    throw UsageError(fmt::format(
        "--reshard-after-forward is fsdp's (FSDP2's reshard_after_forward); --reducer {} keeps "
        "whole parameters",
        o.reducer));
  if (o.activation_checkpointing != "none" && o.activation_checkpointing != "full" &&
      o.activation_checkpointing != "selective")
    throw UsageError(fmt::format("--activation-checkpointing '{}' is not none, full or selective",
                                 o.activation_checkpointing));
  if (!o.param_dtype.empty() && o.param_dtype != "float32" && o.param_dtype != "bf16")
    throw UsageError(fmt::format("--param-dtype '{}' is not float32 or bf16", o.param_dtype));
  if (!o.param_dtype.empty() && o.reducer != "fsdp")
    throw UsageError(fmt::format(
        "--param-dtype is fsdp's (FSDP2's MixedPrecisionPolicy param_dtype for the gathered "
        "parameters); --reducer {} keeps float32 parameters",
        o.reducer));
  if (o.param_dtype == "bf16" && o.amp != "bf16")
    throw UsageError(fmt::format(
        "--param-dtype bf16 computes with bfloat16 parameters under autocast: add --amp bf16 (now "
        "--amp {})",
        o.amp));
  // fp16's loss scaler decides to skip a step from the gradients it sees; a
  // sharded rank sees only its shard, so ranks could decide differently.
  if (o.amp == "fp16" && is_sharded(o.reducer))
    throw UsageError(fmt::format(
        "--amp fp16 with --reducer {}: the loss scaler's skip decision would need the inf/nan "
        "check agreed across the ranks' gradient shards, which dtbench does not do yet; use --amp "
        "bf16 (no scaler) or a replicated reducer",
        o.reducer));
  if (o.amp == "fp16" && o.tp > 1)
    throw UsageError(fmt::format(
        "--amp fp16 with --tp {}: the loss scaler's skip decision would need the inf/nan check agreed "
        "across the tensor-parallel ranks' gradient parts, which dtbench does not do yet; use --amp bf16",
        o.tp));
}

TrainOptions without_strategy(TrainOptions o) {
  o.reducer = "none";
  o.compression = "none";
  o.reshard_after_forward = -1;
  o.param_dtype.clear();
  o.fusion_threshold_mb = o.cycle_time_ms = -1;
  return o;
}

std::string reducer_names() {
  std::string out;
  for (const char* r : kReducerNames) out += (out.empty() ? "" : ", ") + std::string(r);
  return out;
}

bool is_sharded(const std::string& reducer) {
  return reducer == "zero1" || reducer == "zero2" || reducer == "fsdp";
}

std::int64_t expected_model_state_bytes(const std::string& strategy, std::int64_t psi, int k, int n) {
  const std::int64_t K = k;
  if (strategy == "zero1") return 8 * psi + 4 * K * psi / n;
  if (strategy == "zero2") return 4 * psi + (4 + 4 * K) * psi / n;
  if (strategy == "fsdp") return (8 + 4 * K) * psi / n;
  return (8 + 4 * K) * psi;
}

std::int64_t sharded_padding_bound(const std::string& strategy, int buckets, int k, int n) {
  if (!is_sharded(strategy)) return 0;
  // Parameters (full flat buckets), gradients, k states: each at most n - 1
  // elements of padding per bucket.
  return static_cast<std::int64_t>(buckets) * (n - 1) * 4 * (2 + k);
}

bool reducer_supports_compression(const std::string& reducer) {
  return reducer == "overlap" || reducer == "sync" || reducer == "allreduce-after-backward" ||
         reducer == "horovod";
}

namespace {
double env_number(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(x >= 0))
    throw UsageError(fmt::format("{}='{}' is not a non-negative number", name, v));
  return x;
}
}  // namespace

void resolve_horovod(TrainOptions& o) {
  if (o.reducer != "horovod") return;
  if (o.fusion_threshold_mb == -1)
    o.fusion_threshold_mb = env_number("HOROVOD_FUSION_THRESHOLD", 128.0 * 1024 * 1024) / (1024.0 * 1024.0);
  if (o.cycle_time_ms == -1) o.cycle_time_ms = env_number("HOROVOD_CYCLE_TIME", 1.0);
}

std::string default_world_sizes(const std::string& device, int gpus_visible, int tp) {
  if (tp > 1) {
    std::string out = std::to_string(tp);
    if (device == "cuda")
      for (int w = 2 * tp; w <= gpus_visible; w *= 2) out += fmt::format(",{}", w);
    return out;
  }
  if (device != "cuda" || gpus_visible < 1) return "1,2";
  std::string out = "1";
  int w = 2;
  for (; w <= gpus_visible; w *= 2) out += fmt::format(",{}", w);
  if (w / 2 != gpus_visible) out += fmt::format(",{}", gpus_visible);
  return out;
}

}  // namespace dtbench::train
