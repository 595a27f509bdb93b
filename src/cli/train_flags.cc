#include "cli/train_flags.h"

#include <cmath>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "comm/backends.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/units.h"
#include "report/json_io.h"

namespace dtbench::cli {
namespace {

void parse_inject_delay(const std::string& text, train::TrainOptions& t) {
  const auto colon = text.find(':');
  const auto rank = parse_number(text.substr(0, colon));
  const double ms = colon == std::string::npos ? -1 : parse_number(text.substr(colon + 1)).value_or(-1);
  if (!rank || *rank < 0 || *rank != std::floor(*rank) || !(ms >= 0) || ms > 600000)
    throw UsageError(fmt::format(
        "--inject-delay '{}': expected RANK:MS, a rank from 0 and a delay in milliseconds up to "
        "600000 (e.g. 1:50)",
        text));
  t.inject_delay_rank = static_cast<int>(*rank);
  t.inject_delay_ms = ms;
}

}  // namespace

std::vector<int> parse_world_sizes(const std::string& text) {
  std::vector<int> out;
  for (const auto& item : split_list(text)) {
    const auto v = parse_number(item);
    if (!v || *v < 1 || *v > 1024 || *v != std::floor(*v))
      throw UsageError(
          fmt::format("--world-sizes: '{}' is not a rank count between 1 and 1024 (in '{}')", item, text));
    out.push_back(static_cast<int>(*v));
  }
  return out;
}

std::string trace_path_for(const std::string& base, const std::string& run) {
  std::string slug;
  for (char c : run) slug += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ? c : '-';
  return insert_before_extension(base, slug, ".json");
}

void check_train_flags(const train::TrainOptions& t, const std::string& backend) {
  train::validate(t);
  if (!t.trace_path.empty()) report::require_writable_path(t.trace_path, "--trace");
  if (!t.torch_profiler_path.empty()) {
    report::require_writable_path(t.torch_profiler_path, "--torch-profiler");
    const auto& p = t.torch_profiler_path;
    if (p.size() >= 3 && p.compare(p.size() - 3, 3, ".gz") == 0)
      throw UsageError(fmt::format("--torch-profiler {}: the trace is written as plain JSON; name it .json and "
                                   "gzip it afterwards",
                                   p));
  }
  if (t.reducer == "ddp") comm::require_c10d_group(backend);
  if (backend == "nccl" && t.device != "cuda")
    throw UsageError("--backend nccl reduces GPU tensors: add --device cuda");
}

void add_train_flags(CLI::App& cmd, train::TrainOptions& t, bool grid) {
  if (!grid) {
    cmd.add_option("-m,--model", t.model, "Model (see `dtbench models`)")->capture_default_str();
  }
  cmd.add_option("-b,--batch-size", t.batch_size, "Examples per rank per iteration")
      ->capture_default_str();
  cmd.add_option("--image-size", t.image_size, "Image side (image models)")->capture_default_str();
  cmd.add_option("--seq-len", t.seq_len, "Tokens per example (transformer, gpt2*)")->capture_default_str();
  cmd.add_option("--layers", t.layers, "Transformer/GPT layers (0 = model default)")
      ->capture_default_str();
  cmd.add_option("--width", t.width, "Transformer/GPT width, MLP hidden width (0 = model default)")
      ->capture_default_str();
  cmd.add_option("--heads", t.heads, "Transformer/GPT attention heads (0 = model default)")
      ->capture_default_str();
  cmd.add_option("--kv-heads", t.kv_heads,
                  "Llama key/value heads (grouped-query attention; 0 = model default: 8)")
      ->capture_default_str();
  cmd.add_option("--ffn-hidden-size", t.ffn_hidden_size,
                 "Llama: the SwiGLU feed-forward's hidden width (0 = the preset's ratio to the width: 3.5, "
                 "llama3-405b 3.25)")
      ->capture_default_str();
  cmd.add_option("--vocab", t.vocab, "Transformer/GPT/Llama vocabulary (0 = model default: gpt2 50257, llama3 128256)")
      ->capture_default_str();
  cmd.add_option("--num-classes", t.num_classes, "Classes of image and MLP models")
      ->check(CLI::Range(2, 1000000))
      ->capture_default_str();
  cmd.add_option("-n,--iters", t.iters, "Timed iterations")->capture_default_str();
  cmd.add_option("-w,--warmup", t.warmup, "Untimed warm-up iterations")->capture_default_str();
  cmd.add_option("--threads", t.threads, "Intra-op threads per rank (0 = cores / local ranks)")
      ->capture_default_str();
  cmd.add_option("--seed", t.seed, "Seed of the weights and the synthetic data")
      ->check(CLI::Validator(
          [](std::string& v) {
            return v.find_first_not_of("0123456789") == std::string::npos && !v.empty()
                       ? std::string()
                       : "'" + v + "' is not a non-negative integer";
          },
          "UINT"))
      ->capture_default_str();
  if (!grid) {
    cmd.add_option("--reducer", t.reducer,
                    "Data-parallel strategy. Replicated: ddp (c10d::Reducer), overlap (own, "
                    "hook-driven), sync (own, after backward), allreduce-after-backward (one "
                    "allreduce per tensor), horovod (Horovod's tensor fusion: negotiated each "
                    "cycle, fused up to --fusion-threshold-mb), none (one process, no sync). Sharded: zero1 (optimizer "
                    "state sharded), zero2 (gradients too, reduce-scattered during backward), fsdp "
                    "(ZeRO-3: parameters too, gathered per block)")
        ->capture_default_str();
    cmd.add_option("--bucket-cap-mb", t.bucket_cap_mb, "Gradient bucket capacity in MiB")
        ->capture_default_str();
    cmd.add_option("--compression", t.compression,
                    "Allreduce wire format of overlap/sync/allreduce-after-backward: none, fp16 "
                    "(scaled against overflow), bf16; horovod: none or fp16 (Horovod's "
                    "Compression.fp16, unscaled)")
        ->capture_default_str();
  }
  cmd.add_option("--amp", t.amp,
                 grid ? "Mixed-precision settings to sweep (not given: none), e.g. none,bf16 (a column "
                        "each): none, "
                        "bf16 (autocast; a bare --amp), fp16 (autocast + dynamic loss scaler; on "
                        "the CPU needs LibTorch >= 2.4, the wheel build)"
                      : "Mixed precision (not given: none): forward under autocast in bf16 (a bare "
                        "--amp) or fp16 "
                        "(with a dynamic loss scaler; on the CPU needs LibTorch >= 2.4, the wheel "
                        "build)")
      ->expected(0, 1)
      ->default_str("bf16");
  cmd.add_option("--device", t.device,
                 "Where each rank trains: cpu, or cuda (the GPU of its LOCAL_RANK; CUDA builds)")
      ->capture_default_str();
  cmd.add_flag("--channels-last", t.channels_last,
               "Image models: convolution weights and the input batch in NHWC memory format");
  cmd.add_option("--first-bucket-cap-mb", t.first_bucket_cap_mb,
                 "Capacity of the first bucket in MiB (PyTorch DDP: 1)")
      ->capture_default_str();
  cmd.add_option_function<std::string>(
         "--reshard-after-forward",
         [&t](const std::string& v) {
           if (v != "true" && v != "false")
             throw CLI::ValidationError("--reshard-after-forward", "'" + v + "' is not true or false");
           t.reshard_after_forward = v == "true" ? 1 : 0;
         },
         "fsdp: free each unit's gathered parameters after its forward and gather them again for "
         "its backward (true, FSDP2's default) or keep them until its backward (false: more "
         "memory, one all-gather per unit fewer)")
      ->type_name("true|false");
  cmd.add_option("--param-dtype", t.param_dtype,
                 "fsdp: dtype of the gathered parameters, FSDP2's MixedPrecisionPolicy param_dtype "
                 "(reduce_dtype stays float32): float32, or bf16 with --amp bf16 (each unit "
                 "all-gathered in bfloat16, half the bytes; the optimizer steps float32 shards) "
                 "[default: float32]")
      ->type_name("float32|bf16");
  cmd.add_option("--activation-checkpointing", t.activation_checkpointing,
                 std::string(grid ? "Activation checkpointing settings to sweep, e.g. none,full (a column each): "
                                  : "What backward recomputes instead of keeping: ") +
                     "none; full (each block keeps only its input and runs forward again in backward: "
                     "decoders' blocks, ResNet's blocks, the MLP's hidden layers); selective (gpt and llama: "
                     "the attention core, scores, mask, softmax and weighted sum, as Megatron-LM's "
                     "selective recomputation)")
      ->type_name(grid ? "LIST" : "none|full|selective")
      ->capture_default_str();
  cmd.add_option("--fusion-threshold-mb", t.fusion_threshold_mb,
                 "horovod: Horovod's fusion threshold in MiB, 0 = no fusion [default: "
                 "HOROVOD_FUSION_THRESHOLD (bytes) when set, else 128]")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--cycle-time-ms", t.cycle_time_ms,
                 "horovod: Horovod's background cycle time in ms [default: HOROVOD_CYCLE_TIME when "
                 "set, else 1]")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--optimizer", t.optimizer,
                 "sgd (momentum SGD) or adamw (torch.optim.AdamW's update, two states per parameter)")
      ->capture_default_str();
  cmd.add_option("--lr", t.lr, "Learning rate [default: 0.001]")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--peak-tflops", t.peak_tflops,
                 "Peak TFLOP/s of one rank (e.g. `dtbench env --probe`'s matmul figure, or a GPU's "
                 "datasheet): adds MFU = achieved / peak to every row (0 = no MFU)")
      ->capture_default_str();
  cmd.add_option("--momentum", t.momentum, "SGD's momentum [default: 0.9]");
  cmd.add_option("--weight-decay", t.weight_decay,
                 "Weight decay: sgd's coupled (L2 on the gradient, torch.optim.SGD) [default: 1e-4, "
                 "PyTorch's DDP benchmark], adamw's decoupled [default: 0.01]; AdamW's betas (0.9, "
                 "0.999), eps 1e-8");
  cmd.add_option("--trace", t.trace_path,
                 "Write a Chrome trace (Perfetto, chrome://tracing) of every rank's iterations: "
                 "phases, each bucket's collective, clock-aligned; ddp/compare sweeps write one "
                 "file per row/point, FILE's name + the row (e.g. trace.1N-2R.json)");
  cmd.add_option("--torch-profiler", t.torch_profiler_path,
                 "Record the --trace-iters iterations with LibTorch's own profiler (Kineto, as "
                 "torch.profiler: every op with its shapes, and on a GPU every kernel) into a Chrome trace "
                 "the PyTorch tools open (TensorBoard, HTA, Perfetto); one file per row as --trace, and "
                 "in a multi-rank row one per rank (FILE.rankR.json); wheel flavour only (Debian's "
                 "LibTorch has no Kineto); not with --trace");
  cmd.add_option("--trace-iters", t.trace_iters,
                 "Timed iterations --trace or --torch-profiler records (the first ones)")
      ->capture_default_str();
  cmd.add_option_function<std::string>(
         "--inject-delay",
         [&t](const std::string& v) {
           try {
             parse_inject_delay(v, t);
           } catch (const UsageError& e) {
             throw CLI::ValidationError(e.what());  // during parsing: CLI11's error path
           }
         },
         "RANK:MS - rank RANK sleeps MS milliseconds before every backward (a made straggler)")
      ->type_name("RANK:MS");
  // The default is the command's (t.broadcast_buffers as it comes in): ddp
  // false (PyTorch's DDP benchmark, benchmark.py), compare true
  // (compare_ddp.py keeps DistributedDataParallel's default).
  const std::string buffers_default = t.broadcast_buffers ? "true" : "false";
  cmd.add_option_function<std::string>(
         "--broadcast-buffers",
         [&t](const std::string& v) {
           if (v != "true" && v != "false")
             throw CLI::ValidationError("--broadcast-buffers", "'" + v + "' is not true or false");
           t.broadcast_buffers = v == "true";
         },
         "Broadcast module buffers (batch-norm statistics) from rank 0 before each forward, as "
         "DistributedDataParallel(broadcast_buffers=True) does [default: " + buffers_default + "]")
      ->type_name("true|false");
}

}  // namespace dtbench::cli
