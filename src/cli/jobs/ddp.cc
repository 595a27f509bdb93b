// `dtbench ddp`: data-parallel training benchmark (PyTorch's
// benchmarks/distributed/ddp/benchmark.py in C++). Three ways to run:
//  - sweep (default, outside any launcher): this process starts one job per
//    row — the "no ddp" baseline, then each --world-sizes entry — through
//    dtbench's launcher (mpirun for --backend mpi), collects each job's
//    record and prints/writes the table;
//  - row worker (--run-json, internal): one job of the sweep;
//  - external launcher (torchrun/mpirun/srun environment): one run on the
//    world that launcher built.
#include <algorithm>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/ddp/ddp_bench.h"
#include "bench/env_info.h"
#include "cli/commands.h"
#include "cli/jobs.h"
#include "cli/jobs/ddp_job.h"
#include "cli/run_options.h"
#include "cli/sweep_log.h"
#include "comm/communicator.h"
#include "comm/factory.h"
#include "comm/topology.h"
#include "core/error.h"
#include "device/device.h"
#include "core/log.h"
#include "core/net_route.h"
#include "core/units.h"
#include "launch/world.h"
#include "layout/mesh_comms.h"
#include "layout/parallel_dims.h"
#include "report/ddp_record.h"
#include "report/ddp_reporter.h"
#include "report/env_reporter.h"
#include "report/json_io.h"
#include "report/trace_reporter.h"
#include "trace/torch_profiler.h"

namespace dtbench::cli {
namespace {

using Json = nlohmann::ordered_json;


Json config_json(const DdpFlags& f) {
  Json c = train_config_json(f.train);
  c["backend"] = f.run.comm.backend;
  c["bind"] = f.run.bind;
  c["timeout_ms"] = f.run.comm.timeout.count();
  c["world_sizes"] = f.world_sizes;
  c["baseline"] = !f.no_baseline;
  return c;
}

Json new_report(const DdpFlags& f, const Json& env) {
  Json doc;
  doc["schema"] = "dtbench.ddp";
  // 2: runs[].summary became benchmark.py's figures (pooled, per rank);
  // slowest_rank_summary holds what summary held in 1. Readers take both.
  doc["schema_version"] = 2;
  doc["created"] = report::utc_timestamp();
  doc["complete"] = false;
  doc["command"] = original_args();
  doc["env"] = env;
  doc["config"] = config_json(f);
  doc["runs"] = Json::array();
  return doc;
}

std::string details(const DdpFlags& f) {
  const auto& t = f.train;
  std::string layout;
  if (t.tp > 1) layout += fmt::format("tensor-parallel {} ways, ", t.tp);
  if (t.pp > 1)
    layout += fmt::format("pipeline {} stages{} ({}, {} microbatches), ", t.pp,
                          t.stages_per_rank > 1 ? fmt::format(" x {} per rank", t.stages_per_rank) : "",
                          t.pp_schedule, train::effective_microbatches(t));
  if (!layout.empty()) layout += "batch per replica, ";
  return fmt::format("{}reducer {}, backend {}{}, bucket {:g} MB{}{}{}, {} iters + {} warm-up",
                     layout, t.reducer,
                     f.run.comm.backend, f.run.bind == "none" ? "" : ", ranks bound to " + f.run.bind + "s",
                     t.bucket_cap_mb,
                     t.compression == "none" ? "" : ", compression " + t.compression,
                     t.amp == "none" ? "" : ", amp " + t.amp,
                     t.activation_checkpointing == "none" ? "" : ", activation checkpointing " + t.activation_checkpointing,
                     t.iters, t.warmup);
}

// Under a model-parallel row: what the tensor-parallel sums cost rank 0,
// and the pipeline's stages, bubbles and peaks per rank.
void print_layout(std::ostream& out, const Json& extras) {
  if (!extras.contains("layout")) return;
  const auto& l = extras.at("layout");
  if (l.contains("tp_comm")) {
    const auto& c = l.at("tp_comm");
    out << fmt::format("      tensor-parallel sums per iteration (rank 0): {:.0f} allreduces, {:.2f} MiB, {:.4f}s\n",
                       c.at("allreduces_per_iter").get<double>(), c.at("bytes_per_iter").get<double>() / 1048576.0,
                       c.at("seconds_per_iter").get<double>());
  }
  if (l.contains("pipeline")) {
    const auto& p = l.at("pipeline");
    std::string blocks, bubbles, peaks;
    for (const auto& b : p.at("stage_blocks")) blocks += (blocks.empty() ? "" : "+") + std::to_string(b.get<int>());
    const auto& measured = p.at("measured_bubble_per_rank");
    const auto& peak = p.at("peak_bytes_per_rank");
    for (std::size_t r = 0; r < measured.size(); ++r)
      bubbles += fmt::format("{}{:.1f}", r == 0 ? "" : " ", 100 * measured[r].get<double>());
    for (std::size_t r = 0; r < peak.size(); ++r)
      peaks += fmt::format("{}{:.1f}", r == 0 ? "" : " ", peak[r].get<double>() / 1048576.0);
    out << fmt::format("      pipeline {} M{}: blocks per stage {}; bubble % per rank {} (schedule {:.1f}); "
                       "peak MiB per rank {}; rank 0 sent {:.2f} MiB/iter\n",
                       p.at("schedule").get<std::string>(), p.at("microbatches").get<int>(), blocks, bubbles,
                       100 * p.at("schedule_bubble").get<double>(), peaks,
                       p.at("bytes_sent_per_iter").get<double>() / 1048576.0);
  }
  out << fmt::format("      rank 0 holds {} of {} parameters\n", extras.at("param_elements").get<long long>(),
                     l.at("whole_param_elements").get<long long>());
}

// ---- one run on the current world (row worker or external launcher) ----

// A tensor-parallel group exchanges activations twice per block each way:
// across nodes it pays the network for what NVLink or shared memory would
// carry (torchtitan and Megatron-LM keep it inside a node). Warned once by
// rank 0, naming the first such group.
void warn_tp_across_nodes(const layout::ParallelDims& dims, const launch::Topology& topology) {
  if (dims.tp == 1) return;
  for (const auto& g : dims.groups(layout::Dim::kTp)) {
    bool spans = false;
    for (int r : g)
      spans = spans || (r < topology.ranks() && g[0] < topology.ranks() &&
                        topology.node_of_rank[r] != topology.node_of_rank[g[0]]);
    if (spans) {
      log::warn(fmt::format("--tp {}: the tensor-parallel group of ranks {}-{} spans nodes (a node holds a number "
                            "of ranks that --tp does not divide): its activations cross the network",
                            dims.tp, g.front(), g.back()));
      return;
    }
  }
}

struct RunOutcome {
  bench::DdpBenchResult result;
  launch::World world;
  launch::Topology topology;
};

RunOutcome run_here(const DdpFlags& f, const std::string& label_override) {
  RunOutcome out;
  // Under mpirun without MASTER_ADDR rank 0 publishes the store's address over MPI.
  out.world = comm::resolve_master(launch::world_from_env(launch::process_env()), f.run.comm);
  const auto& world = out.world;
  log::set_rank(world.world_size > 1 ? world.rank : -1);
  const int mp = f.train.tp * f.train.pp;
  if (f.train.reducer == "none" && world.world_size > mp)
    throw UsageError(fmt::format(
        "--reducer none trains without synchronisation and needs exactly one rank{} (world size is {})",
        mp > 1 ? fmt::format(" per replica, {} (tp x pp)", mp) : "", world.world_size));
  const auto dims = layout::ParallelDims::of_world(world.world_size, f.train.tp, f.train.pp);
  // One communicator per group of the mesh; none for one rank alone.
  layout::MeshComms mesh;
  mesh.dims = dims;
  if (world.world_size > 1 || f.train.reducer != "none") mesh = layout::make_mesh_comms(world, f.run.comm, dims);
  // The nodes as measured (host identities), not as the environment guessed.
  out.topology = mesh.world ? comm::gather_topology(*mesh.world)
                            : launch::topology_from_hosts({net::host_identity()});
  out.world.num_nodes = out.topology.nodes();
  if (world.rank == 0) warn_tp_across_nodes(dims, out.topology);
  const std::string label =
      !label_override.empty() ? label_override
                              : out.world.label() + (dims.tp > 1 ? fmt::format(" tp{}", dims.tp) : "") +
                                    (dims.pp > 1 ? fmt::format(" pp{}", dims.pp) : "");
  out.result = bench::run_ddp_bench(f.train, out.world, out.topology, mesh, label);
  for (auto& r : out.result.run.ranks)
    if (r.rank < out.topology.ranks()) r.node = out.topology.node_of_rank[r.rank];
  if (mesh.world) mesh.world->barrier();
  return out;
}

int run_worker(const DdpFlags& f) {
  const auto outcome = run_here(f, f.label);
  if (outcome.world.rank == 0) {
    Json doc{{"run", report::to_json(outcome.result.run)},
             {"extras", bench::run_extras_json(outcome.result)}};
    report::write_json_atomic(f.run_json, doc);
  }
  return 0;
}

int run_external(const DdpFlags& f, const std::vector<double>& pcts) {
  auto env = bench::collect_env();
  const auto outcome = run_here(f, "");
  if (outcome.world.rank != 0) return 0;
  env["world"] = bench::world_json(outcome.world, outcome.topology);
  report::print_env(std::cout, env);
  report::DdpConsoleReporter console(std::cout, pcts);
  console.header(f.train.model, f.train.batch_size, details(f));
  console.row(outcome.result.run);
  print_layout(std::cout, bench::run_extras_json(outcome.result));
  report::print_trace_summary(std::cout, outcome.result.trace);
  console.phases({outcome.result.run});
  if (!f.run.json_path.empty()) {
    auto doc = new_report(f, env);
    auto j = report::to_json(outcome.result.run);
    j["extras"] = bench::run_extras_json(outcome.result);
    doc["runs"].push_back(j);
    doc["config"]["param_tensors"] = outcome.result.param_tensors;
    doc["config"]["param_elements"] = outcome.result.whole_param_elements;  // the model's, not a part
    doc["complete"] = true;
    report::write_json_atomic(f.run.json_path, doc);
  }
  return 0;
}

// ---- the sweep ----

int run_sweep(const DdpFlags& f, const std::vector<int>& sizes, const std::vector<double>& pcts) {
  struct Row {
    std::string label, reducer;
    int world;
  };
  std::vector<Row> rows;
  if (!f.no_baseline && f.train.reducer != "none") rows.push_back({"no ddp", "none", 1});
  for (int w : sizes) rows.push_back({"", f.train.reducer, w});

  // The rows already finished in a --resume log are taken from it.
  SweepLog log(f.jsonl, f.resume, config_json(f));
  auto env = bench::collect_env();
  report::print_env(std::cout, env);
  log.begin(env, config_json(f));
  report::DdpConsoleReporter console(std::cout, pcts);
  console.header(f.train.model, f.train.batch_size, details(f));
  auto doc = new_report(f, env);
  std::vector<report::DdpRun> runs;
  auto record = [&](const report::DdpRun& run, const Json& extras, std::size_t i) {
    console.row(run);
    print_layout(std::cout, extras);
    if (extras.contains("trace")) report::print_trace_summary(std::cout, extras["trace"]);
    auto j = report::to_json(run);
    j["extras"] = extras;
    if (doc["config"].find("param_elements") == doc["config"].end()) {
      doc["config"]["param_tensors"] = extras.at("param_tensors");
      // The model's: a tensor-parallel row's own are its part.
      doc["config"]["param_elements"] = extras.contains("layout") ? extras.at("layout").at("whole_param_elements")
                                                                  : extras.at("param_elements");
    }
    doc["runs"].push_back(j);
    runs.push_back(run);
    doc["complete"] = i + 1 == rows.size();
    if (!f.run.json_path.empty()) report::write_json_atomic(f.run.json_path, doc);
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    const bool baseline = row.reducer == "none" && row.world == 1;  // one process, the whole model
    const int tp = baseline ? 1 : f.train.tp, pp = baseline ? 1 : f.train.pp;
    const std::string label = !row.label.empty()
                                  ? row.label
                                  : fmt::format("1N/{}R{}{}", row.world, tp > 1 ? fmt::format(" tp{}", tp) : "",
                                                pp > 1 ? fmt::format(" pp{}", pp) : "");
    report::ComparePoint p;
    p.key.model = f.train.model;
    p.key.world_size = row.world;
    // A model-parallel row of one replica runs no strategy (bench/ddp).
    const std::string strategy = tp * pp > 1 && row.world == tp * pp ? "none" : row.reducer;
    p.key.reducer = strategy;
    p.key.bucket_cap_mb = f.train.bucket_cap_mb;
    p.key.compression = strategy == "none" ? "none" : f.train.compression;
    p.key.amp = f.train.amp;
    p.key.ac = f.train.activation_checkpointing;
    if (const auto* old = log.find(p.key.id())) {
      log::info(fmt::format("[{}/{}] {}: already in {}", i + 1, rows.size(), label, log.path()));
      record(old->run, old->extras, i);
      continue;
    }
    log::info(fmt::format("[{}/{}] {}: {} rank(s){}, reducer {}", i + 1, rows.size(), label, row.world,
                          tp * pp > 1
                              ? fmt::format(" as {}", layout::ParallelDims::of_world(row.world, tp, pp).describe())
                              : "",
                          strategy));
    auto job = f.train;
    job.reducer = row.reducer;
    job.tp = tp;
    job.pp = pp;
    if (pp == 1) {
      job.microbatches = 0;
      job.pp_schedule = "1f1b";
      job.stages_per_rank = 1;
    }
    if (row.reducer == "none") job = train::without_strategy(job);
    if (!job.trace_path.empty()) job.trace_path = trace_path_for(f.train.trace_path, label);
    if (!job.torch_profiler_path.empty())
      job.torch_profiler_path = trace_path_for(f.train.torch_profiler_path, label);
    const auto outcome = run_ddp_job(job, f.run, row.world, label);
    const int code = outcome.status;
    if (code != 0) {
      if (!f.run.json_path.empty()) report::write_json_atomic(f.run.json_path, doc);
      std::string kept;
      if (!f.run.json_path.empty()) kept += "; the rows before it are in " + f.run.json_path;
      if (!log.path().empty()) kept += fmt::format(" (continue with --resume {})", log.path());
      log::error(fmt::format("row '{}' ({} rank(s)) failed with exit status {}{}", label, row.world,
                             code, kept));
      return code;
    }
    p.run = report::ddp_run_from_json(outcome.record.at("run"), "worker record");
    p.extras = outcome.record.at("extras");
    log.append(p);
    record(p.run, p.extras, i);
  }
  console.phases(runs);
  if (!f.run.json_path.empty()) std::cout << "\nReport: " << f.run.json_path << "\n";
  return 0;
}

int run_ddp(DdpFlags& f) {
  // The flags passed check_ddp (cmd_ddp.cc); what needs LibTorch: the model,
  // fp16 autocast on this CPU, the GPUs.
  check_trainable(f.train, f.run.comm.backend);
  train::resolve_horovod(f.train);  // HOROVOD_* read here, forwarded to the workers as flags
  if (!f.world_sizes_given) f.world_sizes = train::default_world_sizes(
        f.train.device, f.train.device == "cuda" ? device::cuda_device_count() : 0, f.train.tp * f.train.pp);
  const auto sizes = parse_world_sizes(f.world_sizes);
  const auto pcts = report::parse_percentiles(f.percentiles, "--percentiles");
  check_ddp_world_sizes(f, sizes);
  if (!f.run_json.empty()) return run_worker(f);

  const auto world = launch::world_from_env(launch::process_env());
  // Enough GPUs for the widest row (--device cuda), before anything starts.
  if (!f.train.torch_profiler_path.empty())
    trace::require_kineto(f.train.torch_profiler_path, f.train.device == "cuda");
  device::check_available(f.train.device, world.source == "single"
                                              ? *std::max_element(sizes.begin(), sizes.end())
                                              : world.local_world_size);
  if (world.source == "single") {
    refuse_pod_of_larger_job("ddp");
    // Cores enough for the widest row, before anything starts.
    plan_local_binding(f.run.bind, *std::max_element(sizes.begin(), sizes.end()));
    // Every row (the "no ddp" baseline too) gets the same threads per rank.
    f.train.threads = sweep_threads(f.train.threads, sizes);
  }
  if (world.source != "single") {
    if (!f.jsonl.empty() || !f.resume.empty())
      throw UsageError(fmt::format("--jsonl/--resume belong to sweeps this command starts itself; "
                                   "under {} it runs one job (use --json)",
                                   world.source));
    if (f.world_sizes_given && (sizes.size() != 1 || sizes[0] != world.world_size))
      throw UsageError(fmt::format("--world-sizes {} does not match the {} rank(s) started by {}",
                                   f.world_sizes, world.world_size, world.source));
    return run_external(f, pcts);
  }
  return run_sweep(f, sizes, pcts);
}

}  // namespace

int ddp_job(DdpFlags& f) { return run_ddp(f); }

}  // namespace dtbench::cli
