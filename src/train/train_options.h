#pragma once
// What one data-parallel training run needs to know. Torch-free, so the CLI
// and the reports can use it without LibTorch.
#include <cstdint>
#include <string>

namespace dtbench::train {

struct TrainOptions {
  // Model name from models::model_registry(). Default "resnet50".
  std::string model = "resnet50";
  // Examples per rank per iteration. Default 32.
  int64_t batch_size = 32;
  // Side of the square input images (image models). Default 224.
  int64_t image_size = 224;
  // Tokens per example (transformer). Default 128.
  int64_t seq_len = 128;
  // Transformer layers and width; MLP hidden width (0 = the model's default).
  int64_t layers = 0;
  int64_t width = 0;
  // Transformer attention heads and vocabulary (0 = the model's default).
  int64_t heads = 0;
  int64_t vocab = 0;
  // Llama: key/value heads of grouped-query attention (0 = the model's default).
  int64_t kv_heads = 0;
  // Llama: the feed-forward's hidden width (0 = the preset's ratio to the
  // width: 3.5, llama3-405b's 3.25, 53248 at its width 16384). Megatron-LM's
  // --ffn-hidden-size.
  int64_t ffn_hidden_size = 0;
  // Output classes of image and vector models. Default 1000.
  int64_t num_classes = 1000;
  // Timed iterations and untimed warm-up iterations. Defaults 20 / 5.
  int iters = 20;
  int warmup = 5;
  // Intra-op threads per rank (0 = cores / local ranks, at least 1).
  int threads = 0;
  // Seeds model initialisation and the synthetic data. Default 1.
  uint64_t seed = 1;
  // Tensor-parallel degree (--tp): each group of tp consecutive ranks holds
  // one copy of the model with its blocks split tp ways (Megatron-LM's plan,
  // models/tensor_parallel.h) and trains the same batch; `reducer` keeps the
  // world / tp copies in step over the data-parallel groups
  // (layout/parallel_dims.h). Default 1.
  int tp = 1;
  // Pipeline-parallel degree (--pp): the model's blocks cut into pp stages
  // (the embedding with the first, the head and loss with the last), each
  // held by ranks tp · dp apart, the local batch run through them in
  // `microbatches` microbatches by `pp_schedule` (gpipe, 1f1b or
  // interleaved-1f1b, with `stages_per_rank` stages per rank). Default 1.
  int pp = 1;
  std::string pp_schedule = "1f1b";
  // 0: torchtitan's default, microbatches of one example (the batch size).
  int microbatches = 0;
  int stages_per_rank = 1;
  // Gradient synchronisation: none, ddp, overlap, sync,
  // allreduce-after-backward. Default "ddp".
  std::string reducer = "ddp";
  // Wire format of the gradient allreduce of dtbench's own reducers (overlap,
  // sync, allreduce-after-backward): none (float32), fp16 or bf16. Default none.
  std::string compression = "none";
  // Mixed precision: "none", "bf16" (forward under autocast in bfloat16) or
  // "fp16" (autocast in float16 with a dynamic loss scaler; CPU autocast has
  // float16 from LibTorch 2.4). Default "none".
  std::string amp = "none";
  // Bucket capacity in MiB (all reducers) and the first bucket's (ddp, overlap,
  // sync; PyTorch DDP uses 1 MiB). Defaults 25 / 1.
  double bucket_cap_mb = 25;
  double first_bucket_cap_mb = 1;
  // Broadcast module buffers (batch-norm statistics) from rank 0 before each
  // forward, as PyTorch DDP does by default. Default true.
  bool broadcast_buffers = true;
  // horovod: Horovod's fusion threshold (MiB; 0 = no fusion) and cycle time
  // (ms); -1 = not given: HOROVOD_FUSION_THRESHOLD (bytes) / HOROVOD_CYCLE_TIME
  // (ms) when set, else Horovod 0.28.1's 128 MiB / 1 ms (resolve_horovod()).
  double fusion_threshold_mb = -1;
  double cycle_time_ms = -1;
  // fsdp: free a unit's gathered parameters after its forward (1, FSDP2's
  // default) or keep them to its backward (0); -1: not given (1).
  int reshard_after_forward = -1;
  // fsdp: dtype of the gathered (unsharded) parameters, FSDP2's
  // MixedPrecisionPolicy(param_dtype=..., reduce_dtype=float32): "float32"
  // or "bf16" (needs --amp bf16: the shards stay float32 for the optimizer,
  // each unit is all-gathered in bfloat16 at half the bytes, the module
  // computes with bfloat16 parameters and their gradients are reduced in
  // float32); "" = not given (float32).
  std::string param_dtype;
  // What backward recomputes instead of keeping (models/checkpoint.h):
  // "none", "full" (every unit: a decoder's blocks, ResNet's blocks, the
  // MLP's hidden layers) or "selective" (the decoders' attention core).
  // Default "none".
  std::string activation_checkpointing = "none";
  // Where the rank computes: "cpu" or "cuda" (model, data and gradients on
  // GPU `device_index`, the rank's LOCAL_RANK). Default "cpu".
  std::string device = "cpu";
  int device_index = 0;
  // Image models: parameters of convolutions and the input batch in NHWC
  // (channels-last) memory format. Default off.
  bool channels_last = false;
  // Peak TFLOP/s of one rank's device, for MFU (0 = not given: no MFU).
  double peak_tflops = 0;
  // --trace: the Chrome trace file of this run ("" = no trace) and how many
  // timed iterations it records (the first ones). Default 3.
  std::string trace_path;
  int trace_iters = 3;
  // --torch-profiler: LibTorch's own profiler (Kineto) records the same
  // iterations as --trace-iters into this Chrome trace ("" = off; each rank
  // its own file, trace/torch_profiler.h). Not with --trace.
  std::string torch_profiler_path;
  // --inject-delay RANK:MS: rank `inject_delay_rank` sleeps inject_delay_ms
  // before every backward (-1 = nobody), to see what a straggler does.
  int inject_delay_rank = -1;
  double inject_delay_ms = 0;
  // The optimizer: "sgd" (momentum SGD) or "adamw". Default "sgd".
  std::string optimizer = "sgd";
  // Learning rate; 0 = the default 0.001 (sgd: PyTorch's DDP benchmark,
  // benchmark.py; adamw: torch.optim.AdamW's).
  double lr = 0;
  // SGD's momentum; -1 = its default 0.9 (refused with adamw when given).
  double momentum = -1;
  // Weight decay; -1 = the default: sgd 1e-4, coupled (L2 added to the
  // gradient, torch.optim.SGD's; benchmark.py's SGD(lr 0.001, momentum 0.9,
  // weight_decay 1e-4)); adamw 0.01, decoupled (torch.optim.AdamW's). AdamW's
  // betas (0.9, 0.999) and eps (1e-8) are torch.optim.AdamW's defaults.
  double weight_decay = -1;
};

// The pipeline's microbatch count: opts.microbatches, or batch_size when 0.
int effective_microbatches(const TrainOptions& o);
// The data-parallel strategies that take a pipeline: those that reduce the
// accumulated gradients once after the step's last backward.
bool reducer_takes_pipeline(const std::string& reducer);
// Why opts.reducer cannot keep pipeline replicas in step ("" when it can,
// or without --pp). Asked where there are replicas (dp > 1).
std::string pipeline_reducer_refusal(const TrainOptions& o);

// The --optimizer names.
inline const char* const kOptimizerNames[] = {"sgd", "adamw"};

// The hyper-parameters a run uses, defaults filled in (above).
double effective_lr(const TrainOptions& o);
double effective_momentum(const TrainOptions& o);       // 0 for adamw
double effective_weight_decay(const TrainOptions& o);
// Float32 optimizer states per parameter, K of the memory formulas: sgd 1
// (0 with momentum 0), adamw 2.
int optimizer_states(const TrainOptions& o);
// Model-state bytes one rank is expected to hold (float32, k optimizer
// states per parameter, psi parameters, n ranks): replicated (8 + 4k)psi;
// zero1 8psi + 4k psi/n; zero2 4psi + (4 + 4k)psi/n; fsdp (8 + 4k)psi/n
// (after the step, when no unit is gathered). The sharded figures
// leave out the padding of each bucket to a multiple of n (at most n - 1
// elements per bucket, sharded_padding_bound).
std::int64_t expected_model_state_bytes(const std::string& strategy, std::int64_t psi, int k, int n);
// The most the padding adds to the sharded figures: n - 1 elements per
// bucket in every float32 tensor a rank holds of it.
std::int64_t sharded_padding_bound(const std::string& strategy, int buckets, int k, int n);

// The reducer names in the order `--help` lists them.
inline const char* const kReducerNames[] = {"none",  "ddp",   "overlap", "sync", "allreduce-after-backward",
                                           "horovod", "zero1", "zero2",   "fsdp"};
// "none, ddp, overlap, ..., zero2": for messages.
std::string reducer_names();
// True for the strategies that shard model state over the ranks (zero1, zero2, fsdp).
bool is_sharded(const std::string& reducer);
// The --amp names.
inline const char* const kAmpNames[] = {"none", "bf16", "fp16"};
// The --compression names.
inline const char* const kCompressionNames[] = {"none", "fp16", "bf16"};

// True for the reducers that can compress their allreduce (dtbench's own).
bool reducer_supports_compression(const std::string& reducer);

// Fills in fusion_threshold_mb / cycle_time_ms of a horovod run that did not
// give them: from HOROVOD_FUSION_THRESHOLD (bytes) and HOROVOD_CYCLE_TIME
// (ms) as Horovod reads them, else Horovod 0.28.1's defaults. Throws
// UsageError for a variable that is not a number. Other reducers: unchanged.
void resolve_horovod(TrainOptions& o);

// `o` trained without a data-parallel strategy: reducer none, and none of a
// strategy's own settings (compression, fsdp's resharding and gathered
// dtype, horovod's fusion) left to refuse or ignore. The sweep's "no ddp"
// row; a tensor-parallel row of one replica.
TrainOptions without_strategy(TrainOptions o);

// Throws UsageError for out-of-range values (sizes, counts, unknown reducer or
// compression, compression with a reducer that cannot compress).
void validate(const TrainOptions& o);

// --world-sizes when the user gave none: "1,2" on the CPU; with --device
// cuda one rank per GPU, 1,2,4,... up to the GPUs visible (and that count
// itself), as the seed's table sweeps 1..8 GPUs of a machine; "1,2" when no
// GPU is visible, so the refusal names the missing GPU.
// With tp > 1 only multiples of tp: "tp" on the CPU; tp, 2·tp, 4·tp, ... up
// to the GPUs visible with --device cuda ("tp" when fewer are visible).
std::string default_world_sizes(const std::string& device, int gpus_visible, int tp = 1);

}  // namespace dtbench::train
