#include "bench/ddp/ddp_bench.h"

#include <chrono>
#include <cstdint>
#include <iostream>

#include <fmt/format.h>
#include <torch/torch.h>

#include "bench/ddp/ddp_trace.h"
#include "comm/communicator.h"
#include "core/allocator.h"
#include "core/blas_threads.h"
#include "core/error.h"
#include "core/log.h"
#include "device/memory.h"
#include "launch/binding.h"
#include "stats/stats.h"
#include "layout/tp_region.h"
#include "train/flops.h"
#include "train/pipeline.h"
#include "train/replicas.h"
#include "train/trainer.h"

namespace dtbench::bench {
namespace {

constexpr int kPhases = 5;

// The rank's CPU affinity travels as a bit mask, 32 CPUs per float64 word
// (exact), so every rank's block has the same size.
constexpr int kCpuWords = 1024 / 32;

// Packs node + CPU mask + the five phase vectors + a flag and the five
// CUDA-event phase vectors (zeros on the CPU) into one float64 tensor per rank.
torch::Tensor pack(const train::PhaseTimes& t, const train::PhaseTimes& device, int node) {
  const int64_t n = static_cast<int64_t>(t.total.size());
  auto out = torch::zeros({1 + kCpuWords + kPhases * n + 1 + kPhases * n}, torch::kDouble);
  auto* p = out.data_ptr<double>();
  *p++ = node;
  std::uint32_t words[kCpuWords] = {};
  for (int c : launch::current_affinity())
    if (c < 32 * kCpuWords) words[c / 32] |= 1u << (c % 32);
  for (auto w : words) *p++ = static_cast<double>(w);
  for (const auto* v : {&t.forward, &t.backward, &t.comm_wait, &t.optimizer, &t.total})
    for (double x : *v) *p++ = x;
  const bool has_device = static_cast<int64_t>(device.total.size()) == n && n > 0;
  *p++ = has_device ? 1.0 : 0.0;
  if (has_device)
    for (const auto* v : {&device.forward, &device.backward, &device.comm_wait, &device.optimizer, &device.total})
      for (int64_t i = 0; i < n; ++i) *p++ = i < static_cast<int64_t>(v->size()) ? (*v)[i] : 0.0;
  return out;
}

report::RankSamples unpack(const double* p, int64_t n, int rank) {
  report::RankSamples r;
  r.rank = rank;
  r.node = static_cast<int>(*p++);
  launch::CpuList cpus;
  for (int w = 0; w < kCpuWords; ++w) {
    const auto bits = static_cast<std::uint32_t>(*p++);
    for (int b = 0; b < 32; ++b)
      if (bits & (1u << b)) cpus.push_back(32 * w + b);
  }
  r.cpus = launch::describe_cpus(cpus);
  for (auto* v : {&r.forward, &r.backward, &r.comm_wait, &r.optimizer, &r.total}) {
    v->assign(p, p + n);
    p += n;
  }
  if (*p++ != 0.0) {
    auto& d = r.device;
    for (auto* v : {&d.forward, &d.backward, &d.comm_wait, &d.optimizer, &d.total}) {
      v->assign(p, p + n);
      p += n;
    }
  }
  return r;
}

}  // namespace

DdpBenchResult run_ddp_bench(const train::TrainOptions& options, const launch::World& world,
                             const launch::Topology& topology, const layout::MeshComms& mesh,
                             const std::string& label) {
  comm::Communicator* const comm = mesh.world.get();
  // Before any tensor: the CPU's memory figures count every allocation.
  device::install_cpu_memory_counter();
  train::TrainOptions opts = options;
  opts.device_index = world.local_rank;  // --device cuda: the GPU of LOCAL_RANK
  DdpBenchResult res;
  // Subnormal floats flushed to zero (torch.set_flush_denormal(True)): a run
  // whose values underflow would otherwise time the CPU's slow path for them
  // (measured: a diverging GPT-2, 4 x 256, fsdp at 2 ranks, backward 2.07 s
  // against 0.64 s flushed), and two runs of the same work would differ by
  // their numerics. The Python peers do the same.
  res.flush_denormal = at::globalContext().setFlushDenormal(true);
  res.threads = train::resolve_threads(opts.threads, world.local_world_size);
  torch::set_num_threads(res.threads);
  res.blas_threads = set_blas_threads(res.threads);
  // Rank 0 counts the model's FLOPs (the shape formula, or one forward of
  // one example on a copy) before anyone trains; the others meet it at the
  // first collective.
  const double train_flops = world.rank == 0 ? train::train_flops_per_example(opts) : 0;
  res.dims = mesh.dims;
  const auto coords = mesh.dims.coords(world.rank);
  const int dp = mesh.dims.dp;
  // Each replica starts from its own weights (seed + its data-parallel
  // rank), as PyTorch's DDP benchmark seeds by rank: the strategy's initial
  // broadcast must make the replicas equal, and the replica check below sees
  // it when it does not. A tensor-parallel group makes one model from one
  // seed and splits it.
  train::TrainOptions own_weights = opts;
  own_weights.seed = opts.seed + static_cast<std::uint64_t>(coords.dp);
  // The tensor-parallel sums (running; the timed iterations'): declared
  // before the model, whose blocks count into it, so it outlives them.
  layout::TpCommMeter tp_meter, tp_timed;
  auto model = train::make_seeded_model(own_weights);
  std::vector<int64_t> whole_numel;
  for (const auto& p : model->module()->parameters()) {
    whole_numel.push_back(p.numel());
    res.whole_param_elements += p.numel();
  }
  auto split_tp = [&](models::Model& m) {
    auto* plan = m.tp_seam();
    if (plan == nullptr) throw UsageError(fmt::format("--tp {}: {} has no tensor-parallel plan", opts.tp, opts.model));
    plan->parallelize_tp(layout::make_tp_region(*mesh.tp, &tp_meter));
  };
  if (mesh.tp != nullptr) split_tp(*model);
  // The parameters the plan left whole: replicated over the tensor-parallel
  // group, where they must stay bitwise equal.
  std::vector<torch::Tensor> replicated;
  {
    std::size_t i = 0;
    for (const auto& p : model->module()->parameters()) {
      if (i < whole_numel.size() && p.numel() == whole_numel[i]) replicated.push_back(p);
      ++i;
    }
  }
  // --pp: this rank's stages (chunk c is stage c · pp + its pipeline rank),
  // each cut from a whole model of the same seed (split by --tp first).
  std::vector<std::unique_ptr<models::Model>> extra_chunks;
  std::unique_ptr<train::Pipeline> pipeline;
  if (mesh.pp != nullptr) {
    const int p = mesh.dims.pp, v = opts.stages_per_rank;
    if (model->pp_seam() == nullptr)
      throw UsageError(fmt::format("--pp {}: {} has no pipeline split (gpt and llama models have)", p, opts.model));
    const auto schedule = layout::parse_pp_schedule(opts.pp_schedule);
    const int m = train::effective_microbatches(opts);
    const auto why = layout::pipeline_refusal(schedule, p, m, v, opts.batch_size, model->pp_seam()->pipeline_blocks());
    if (!why.empty()) throw UsageError(why);
    res.stage_blocks = layout::stage_blocks(static_cast<int>(model->pp_seam()->pipeline_blocks()), p * v);
    std::vector<models::Model*> chunks;
    for (int c = 0; c < v; ++c) {
      models::Model* chunk = model.get();
      if (c > 0) {
        extra_chunks.push_back(train::make_seeded_model(own_weights));
        chunk = extra_chunks.back().get();
        if (mesh.tp != nullptr) split_tp(*chunk);
      }
      chunk->pp_seam()->keep_stage(train::stage_span(model->pp_seam()->pipeline_blocks(), p * v, c * p + coords.pp));
      chunks.push_back(chunk);
    }
    const auto mo = train::model_options(opts);
    pipeline = std::make_unique<train::Pipeline>(
        train::PipelineOptions{schedule, p, coords.pp, m, v}, chunks, *mesh.pp,
        std::vector<int64_t>{opts.batch_size / m, opts.seq_len, mo.width});
    res.pp_schedule = opts.pp_schedule;
    res.microbatches = m;
    res.stages_per_rank = v;
    res.pp_schedule_bubble = layout::schedule_bubble(p, m, v);
  }
  torch::nn::Module& trained = pipeline ? pipeline->module() : *model->module();
  {
    // What the cut kept of the replicated parameters; this rank's counts.
    std::vector<torch::Tensor> kept;
    const auto params = trained.parameters();
    for (const auto& r : replicated)
      for (const auto& p : params)
        if (p.unsafeGetTensorImpl() == r.unsafeGetTensorImpl()) kept.push_back(r);
    replicated = kept;
    for (const auto& p : params) {
      ++res.param_tensors;
      res.param_elements += p.numel();
    }
  }
  // The strategy runs on the data-parallel group: its rank there, its size
  // (without --tp or --pp the job's communicator, one rank included, so a
  // 1-rank row runs its strategy); none where a tensor-parallel group or a
  // pipeline is the whole replica set. --inject-delay names a job rank.
  comm::Communicator* const dp_comm = mesh.dims.tp == 1 && mesh.dims.pp == 1 ? comm : mesh.dp;
  train::TrainOptions on_dp = dp_comm == nullptr ? train::without_strategy(opts) : opts;
  if (pipeline && dp_comm != nullptr)
    if (const auto why = train::pipeline_reducer_refusal(opts); !why.empty()) throw UsageError(why);
  on_dp.inject_delay_rank = opts.inject_delay_rank == world.rank ? coords.dp : -1;

  auto last_print = std::chrono::steady_clock::now();
  const bool leader = world.rank == 0;
  double pp_wait = 0, pp_span = 0, pp_bytes = 0;
  auto progress = [&](int it, int total, double sec) {
    if (it + 1 == opts.warmup) tp_meter.reset();
    if (it + 1 == total) tp_timed = tp_meter;  // before compression's untimed probe iteration
    if (pipeline && it >= opts.warmup && it < total) {
      pp_wait += pipeline->last_step().wait_s;
      pp_bytes += static_cast<double>(pipeline->last_step().bytes_sent);
      pp_span += sec;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!leader || it + 1 == total || now - last_print < std::chrono::seconds(5)) return;
    last_print = now;
    std::cerr << fmt::format("  {} {}: iteration {}/{} ({:.3f} s/iter)\n", label, on_dp.reducer,
                             it + 1, total, sec);
  };
  const auto timeline = make_timeline(on_dp);
  const trace::ClockEstimate clock_before = timeline ? clock_before_trace(comm) : trace::ClockEstimate{};
  const auto profiler = make_torch_profiler(on_dp, world, comm != nullptr ? comm->backend() : "none");
  trace::TrainObserver& observer = timeline    ? static_cast<trace::TrainObserver&>(*timeline)
                                   : profiler ? *profiler
                                              : trace::null_observer();
  const auto result = train::train(on_dp, *model, dp_comm, dp, coords.dp, progress, observer, pipeline.get());
  if (profiler) profiler->save();  // after the loop: the file's writing is not timed
  if (profiler && leader) {
    const auto& p = on_dp.torch_profiler_path;
    const int n = world.world_size;
    log::info(n > 1 ? fmt::format("{}: torch profiler traces {} ... {}", label, trace::torch_profiler_rank_path(p, 0, n),
                                  trace::torch_profiler_rank_path(p, n - 1, n))
                    : fmt::format("{}: torch profiler trace {}", label, p));
  }
  res.buckets = static_cast<int>(result.buckets.size());
  res.last_loss = result.last_loss;
  res.compression = result.compression;
  res.minor_faults_per_iter = result.minor_faults_per_iter;
  res.cpu_s_per_iter = result.cpu_s_per_iter;
  res.host_steal_s_per_iter = result.host_steal_s_per_iter;
  res.amp = opts.amp;
  res.amp_skipped_steps = result.amp_skipped_steps;
  res.amp_final_scale = result.amp_final_scale;
  res.device = result.device;
  res.channels_last = opts.channels_last;
  res.device_times = result.device_times;
  res.buffers_compared = dp_comm != nullptr && result.buffers_in_step;

  // Replicas must be bitwise identical before anything is recorded: over
  // each data-parallel group the whole (part of the) model; over each
  // tensor-parallel group what it replicates, and the loss it computed
  // together.
  const uint64_t hash = dp_comm != nullptr ? train::verify_replicas(*dp_comm, trained, result.buffers_in_step)
                                           : train::parameter_hash(trained);
  if (mesh.tp != nullptr) {
    replicated.push_back(torch::tensor({result.last_loss}, torch::kDouble));
    train::verify_same(*mesh.tp, replicated, "the tensor-parallel group's replicated parameters and loss");
  }
  if (timeline) res.trace = finish_trace(on_dp, comm, world, topology, *timeline, label, clock_before);

  if (pipeline && opts.iters > 0) {
    res.pp_wait_s_per_iter = pp_wait / opts.iters;
    res.pp_bytes_per_iter = pp_bytes / opts.iters;
    auto mine = torch::tensor({pp_span > 0 ? pp_wait / pp_span : 0.0}, torch::kDouble);
    auto all = torch::empty({world.world_size}, torch::kDouble);
    comm->allgather(mine, all)->wait(comm->timeout());
    res.pp_bubble_per_rank.assign(all.data_ptr<double>(), all.data_ptr<double>() + world.world_size);
  }
  if (mesh.tp != nullptr && opts.iters > 0) {
    res.tp_comm_s_per_iter = tp_timed.seconds / opts.iters;
    res.tp_comm_calls_per_iter = static_cast<double>(tp_timed.calls) / opts.iters;
    res.tp_comm_bytes_per_iter = static_cast<double>(tp_timed.bytes) / opts.iters;
  }
  auto& run = res.run;
  run.label = label;
  run.reducer = on_dp.reducer;  // none where the data-parallel degree is 1: no strategy ran
  run.world_size = world.world_size;
  run.nodes = world.num_nodes;
  run.batch_per_rank = opts.batch_size;
  run.tp = mesh.dims.tp;
  run.pp = mesh.dims.pp;
  run.param_hash = train::hex(hash);
  run.threads = res.threads;
  run.train_flops_per_example = train_flops;
  run.peak_tflops = opts.peak_tflops;
  run.tokens_per_example = model->input_kind() == models::InputKind::kTokens ? opts.seq_len : 0;
  run.malloc = alloc::current().mode;
  // Memory: the most over the ranks (equal for replicated strategies; the
  // sharded ones differ by at most a bucket's padding).
  {
    auto mem = torch::tensor({static_cast<double>(result.peak_bytes),
                              static_cast<double>(result.model_state_bytes()),
                              static_cast<double>(result.peak_rss_bytes)},
                             torch::kDouble);
    if (comm != nullptr && world.world_size > 1) {
      auto all = torch::empty({world.world_size * 3}, torch::kDouble);
      comm->allgather(mem, all)->wait(comm->timeout());
      auto per_rank = all.view({world.world_size, 3});
      for (int r = 0; r < world.world_size; ++r)
        res.peak_bytes_per_rank.push_back(static_cast<std::int64_t>(per_rank[r][0].item<double>()));
      mem = per_rank.amax(0);
      // A rank without the RSS figure makes it unknown, not the others' peak.
      if (per_rank.select(1, 2).amin().item<double>() < 0) mem[2] = -1.0;
    }
    run.peak_bytes = static_cast<std::int64_t>(mem[0].item<double>());
    run.model_state_bytes = static_cast<std::int64_t>(mem[1].item<double>());
    run.peak_rss_bytes = static_cast<std::int64_t>(mem[2].item<double>());
    // Of this rank's part (a 1/tp share of the blocks), sharded over its
    // data-parallel group.
    run.model_state_expected_bytes = train::expected_model_state_bytes(
        on_dp.reducer, res.param_elements, result.optimizer_states, dp);
  }
  res.reserved_peak_bytes = result.reserved_peak_bytes;
  res.param_bytes = result.param_bytes;
  res.grad_bytes = result.grad_bytes;
  res.optimizer_bytes = result.optimizer_bytes;
  const int64_t n = static_cast<int64_t>(result.times.total.size());
  auto mine = pack(result.times, result.device_times, world.node_rank);
  if (comm != nullptr && world.world_size > 1) {
    auto all = torch::empty({world.world_size * mine.numel()}, torch::kDouble);
    comm->allgather(mine, all)->wait(comm->timeout());
    for (int r = 0; r < world.world_size; ++r)
      run.ranks.push_back(unpack(all.data_ptr<double>() + r * mine.numel(), n, r));
  } else {
    run.ranks.push_back(unpack(mine.data_ptr<double>(), n, world.rank));
  }
  return res;
}

nlohmann::ordered_json compression_json(const train::CompressionStats& c) {
  return {{"dtype", c.dtype},
          {"overflows", c.overflows},
          {"min_scale", c.min_scale},
          {"max_scale", c.max_scale},
          {"measured", c.measured},
          {"max_rel_error", c.max_rel_error()},
          {"rel_l2_error", c.rel_l2_error()},
          {"max_abs_error", c.max_abs_error},
          {"max_abs_exact", c.max_abs_exact}};
}

nlohmann::ordered_json run_extras_json(const DdpBenchResult& r) {
  nlohmann::ordered_json j{{"threads", r.threads},
                           {"blas_threads", r.blas_threads},
                           {"buckets", r.buckets},
                           {"last_loss", r.last_loss},
                           {"param_tensors", r.param_tensors},
                           {"param_elements", r.param_elements},
                           {"malloc", alloc::current().mode},
                           {"minor_faults_per_iter", r.minor_faults_per_iter},
                           {"cpu_s_per_iter", r.cpu_s_per_iter},
                           {"host_steal_s_per_iter", r.host_steal_s_per_iter},
                           {"buffers_compared", r.buffers_compared},
                           {"flush_denormal", r.flush_denormal}};
  j["device"] = r.device;
  if (r.dims.tp > 1 || r.dims.pp > 1) {
    // The mesh: its degrees and every group (job ranks).
    nlohmann::ordered_json groups;
    for (auto d : {layout::Dim::kPp, layout::Dim::kDp, layout::Dim::kTp}) groups[layout::to_string(d)] = r.dims.groups(d);
    j["layout"] = {{"dp", r.dims.dp}, {"tp", r.dims.tp}, {"pp", r.dims.pp}, {"groups", groups},
                   {"whole_param_elements", r.whole_param_elements}};
    if (r.dims.tp > 1)
      j["layout"]["tp_comm"] = {{"seconds_per_iter", r.tp_comm_s_per_iter},
                                {"allreduces_per_iter", r.tp_comm_calls_per_iter},
                                {"bytes_per_iter", r.tp_comm_bytes_per_iter}};
    if (r.dims.pp > 1)
      j["layout"]["pipeline"] = {{"schedule", r.pp_schedule},
                                 {"microbatches", r.microbatches},
                                 {"stages_per_rank", r.stages_per_rank},
                                 {"stage_blocks", r.stage_blocks},
                                 {"schedule_bubble", r.pp_schedule_bubble},
                                 {"measured_bubble_per_rank", r.pp_bubble_per_rank},
                                 {"peak_bytes_per_rank", r.peak_bytes_per_rank},
                                 {"wait_s_per_iter", r.pp_wait_s_per_iter},
                                 {"bytes_sent_per_iter", r.pp_bytes_per_iter}};
  }
  // Rank 0's model state by kind, bytes; the GPU's reserved peak.
  j["model_state"] = {{"params", r.param_bytes}, {"grads", r.grad_bytes}, {"optimizer", r.optimizer_bytes}};
  if (r.reserved_peak_bytes >= 0) j["reserved_peak_bytes"] = r.reserved_peak_bytes;
  if (r.channels_last) j["channels_last"] = true;
  if (!r.device_times.total.empty()) {
    // This rank's (rank 0's) phases by CUDA events, medians in seconds.
    const auto& d = r.device_times;
    nlohmann::ordered_json p;
    p["forward"] = stats::percentile(d.forward, 50);
    p["backward"] = stats::percentile(d.backward, 50);
    p["comm_wait"] = stats::percentile(d.comm_wait, 50);
    p["optimizer"] = stats::percentile(d.optimizer, 50);
    p["total"] = stats::percentile(d.total, 50);
    j["device_phase_p50_s"] = p;
  }
  if (!r.trace.is_null()) j["trace"] = r.trace;
  if (r.compression.dtype != "none") j["compression"] = compression_json(r.compression);
  if (r.amp == "fp16")
    j["amp"] = {{"dtype", r.amp}, {"skipped_steps", r.amp_skipped_steps}, {"final_scale", r.amp_final_scale}};
  return j;
}

}  // namespace dtbench::bench
