#pragma once
// The options of `dtbench project` as parsed (cmd_project.cc), shared with
// project_profile.cc, which makes the compute profile from them.
#include <cstdint>
#include <string>
#include <vector>

namespace dtbench::cli {

struct ProjectFlags {
  // Profile: a report, or a model with phase times.
  std::string profile, row;
  std::vector<std::string> measured;
  std::string model;
  std::int64_t batch_size = 32, image_size = 224, seq_len = 128;
  double forward_ms = -1, backward_ms = -1, optimizer_ms = -1, ddp_overhead_ms = 0;
  // Or forward and backward from an achieved training rate: --tflops, or
  // --peak-tflops x --mfu (-1: not given).
  double tflops = -1, peak_tflops = -1, mfu = -1;
  int threads = 0;  // with --model: threads per rank (0: not stated)
  // With --model of a decoder (gpt2, llama families): its shape, as `train`
  // takes it (0: the preset's).
  std::int64_t layers = 0, width = 0, heads = 0, kv_heads = 0, vocab = 0, ffn_hidden_size = 0;
  // Network.
  int ranks_per_node = 1;
  std::string intra_bw, intra_latency, inter_bw, inter_latency, base_latency = "0";
  std::string comm_intra, comm_inter;
  std::string algo = "auto";
  double bw_scale = 1;
  // What to project, and what-ifs.
  std::string world_sizes = "1,2,4,8,16,32,64,128,256,512,1024,2048,4096";
  double bucket_cap_mb = 0, first_bucket_cap_mb = 0;  // 0: not given (the profile's buckets)
  std::string compression = "none";
  bool no_overlap = false;
  double cores_per_node = 0;
  // Strategies and memory.
  std::string reducers = "ddp";
  std::string optimizer = "sgd", param_dtype = "float32", reshard_after_forward = "true";
  std::string memory_per_rank, activation_memory;
  std::string reduce_scatter = "native";
  double fusion_threshold_mb = -1, cycle_time_ms = -1;  // horovod's (-1: HOROVOD_* or Horovod's defaults)
  // The layout around the strategy, as `dtbench train` takes it.
  int tp = 1, pp = 1, cp = 1, microbatches = 1, stages_per_rank = 1;
  std::string pp_schedule = "1f1b", activation_checkpointing = "none", amp = "none", attention = "eager";
  bool sequence_parallel = false, loss_parallel = false;
  bool pp_schedule_given = false;  // set after parsing
  // --search: every layout of the one world size, ranked (layout_search.h).
  bool search = false;
  int top = 10;
  std::int64_t global_batch = 0;
  bool reducers_given = false, top_given = false, optimizer_given = false;  // set after parsing (--search defaults to every strategy)
  std::vector<std::string> layout_given;  // layout flags given (set after parsing)
  std::string json;
  bool bucket_cap_given = false, first_bucket_cap_given = false;  // set after parsing
  // The --model options given on the command line (set after parsing): a
  // --profile report ran its own image size and phases, so they are refused
  // with it rather than ignored; --batch-size and --seq-len move its
  // profile to that shape (rescale_from_report).
  std::vector<std::string> model_only_given;
  bool batch_given = false, seq_given = false;
};

}  // namespace dtbench::cli
