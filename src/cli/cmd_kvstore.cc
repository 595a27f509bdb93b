// `dtbench kvstore`: parameter-server push/pull bandwidth (MXNet's
// tools/bandwidth/measure.py), over dtbench's TensorPipe RPC.
#include <cmath>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/env_info.h"
#include "bench/kvstore/kvstore_bench.h"
#include "bench/kvstore/mxnet_resnet.h"
#include "cli/commands.h"
#include "comm/factory.h"
#include "cli/run_options.h"
#include "core/error.h"
#include "device/device.h"
#include "core/log.h"
#include "core/units.h"
#include "launch/world.h"
#include "models/model.h"
#include "report/env_reporter.h"
#include "report/json_io.h"
#include "report/kvstore_record.h"
#include "report/node_share.h"
#include "rpc/transport.h"
#include "stats/stats.h"

namespace dtbench::cli {
namespace {

struct KvFlags {
  RunOptions run;
  bench::kv::KvOptions kv;
  std::string mode = "dist_sync";
  std::string model;              // torchvision-shaped arrays (every parameter)
  std::string network = "resnet";  // measure.py's --network
  int num_layers = 152;            // measure.py's --num-layers (its default)
  int arrays = 0;
  std::string size = "4M";
  std::string optimizer = "none";
  std::int64_t bigarray = 1000000;
  int check = 1;
};

std::vector<bench::kv::KvArray> model_arrays(const std::string& name) {
  const auto& entry = models::find_model(name);
  auto model = entry.make(entry.defaults);
  std::vector<bench::kv::KvArray> out;
  for (const auto& p : model->module()->named_parameters())
    out.push_back({p.key(), static_cast<std::size_t>(p.value().numel())});
  return out;
}

void finish(KvFlags& f) {
  finish_run_options(f.run);
  auto& o = f.kv;
  o.mode = bench::kv::parse_mode(f.mode);
  if (f.optimizer != "none" && f.optimizer != "sgd")
    throw UsageError(fmt::format("--optimizer '{}' must be none or sgd", f.optimizer));
  o.sgd = f.optimizer == "sgd";
  o.check = f.check != 0;
  o.bigarray_bound = static_cast<std::size_t>(f.bigarray);
  if (!bench::kv::is_dist(o.mode)) o.servers = 0;
  if (f.arrays > 0) {
    o.array_source = "uniform";
    o.arrays = bench::kv::uniform_arrays(f.arrays, parse_bytes(f.size, "--size"));
  } else if (!f.model.empty()) {
    o.array_source = f.model;
    o.arrays = model_arrays(f.model);
  } else {
    if (f.network != "resnet")
      throw UsageError(fmt::format("--network '{}': the one network measure.py's arrays come from here is resnet",
                                   f.network));
    o.array_source = fmt::format("mxnet-resnet-{}", f.num_layers);
    o.arrays = bench::kv::mxnet_resnet_arrays(f.num_layers);
  }
  o.transport.timeout = f.run.comm.timeout;
  bench::kv::validate(o);
  rpc::validate(o.transport);
  if (f.run.comm.backend == "nccl" && o.device != "cuda")
    throw UsageError("--backend nccl reduces GPU tensors: add --device cuda (with --mode device)");
  if (f.run.comm.backend == "mpi" && o.device == "cuda")
    throw UsageError("--backend mpi moves host buffers only; use --backend nccl or gloo with --device cuda");
  // Workers run on this host when dtbench starts them: one GPU each.
  device::check_available(o.device, o.workers);
}

nlohmann::ordered_json config_json(const KvFlags& f, const bench::kv::KvRunResult& r) {
  const auto& o = f.kv;
  return {{"mode", bench::kv::to_string(o.mode)},
          {"workers", o.workers},
          {"servers", o.servers},
          {"replicas", o.replicas},
          {"arrays_from", o.array_source},
          {"num_arrays", o.arrays.size()},
          {"total_bytes", r.layout.total_numel * 4},
          {"keys", r.layout.keys.size()},
          {"server_imbalance", bench::kv::imbalance(r.layout)},
          {"bigarray_bound", o.bigarray_bound},
          {"optimizer", o.sgd ? "sgd" : "none"},
          {"lr", o.sgd ? o.lr : 0.0f},
          {"iters", o.iters},
          {"warmup", o.warmup},
          {"check", o.check},
          {"separate_pull", o.separate_pull},
          {"device", o.device},
          {"bytes_per_worker_per_iter", bench::kv::bytes_per_worker(o, r.layout.total_numel)},
          {"transport", r.transport},
          {"backend", o.mode == bench::kv::KvMode::kDevice ? f.run.comm.backend : ""},
          {"bind", f.run.bind},
          {"timeout_ms", f.run.comm.timeout.count()}};
}

int run_kvstore(KvFlags& f) {
  finish(f);
  auto& o = f.kv;
  f.run.nproc = bench::kv::world_size_for(o);
  if (auto code = self_launch(f.run, /*nproc_implicit=*/true)) return *code;
  // Under mpirun without MASTER_ADDR rank 0 publishes the store's address over MPI.
  const auto world = comm::resolve_master(launch::world_from_env(launch::process_env()), f.run.comm);
  bench::set_rank_threads(world.local_world_size);
  log::set_rank(world.world_size > 1 ? world.rank : -1);
  const bool leader = world.rank == 0;
  o.transport.listen_host = rpc::listen_host_for(world.master_addr, f.run.comm.iface);
  auto env = bench::collect_env();
  env["world"] = bench::world_json(world);
  const auto layout = bench::kv::plan_layout(o.arrays, std::max(o.servers, 1), o.bigarray_bound);
  if (leader) {
    report::print_env(std::cout, env);
    std::cout << fmt::format(
        "# dtbench kvstore: mode {}, {} worker(s), {} server(s), {} replica(s){}, optimizer {}\n",
        bench::kv::to_string(o.mode), o.workers, o.servers, o.replicas,
        o.device == "cuda" ? " on each worker's GPU" : "", o.sgd ? "sgd" : "none");
    std::cout << report::kv_size_line(o.arrays.size(), layout.total_numel * 4) << "\n" << std::flush;
  }
  auto r = bench::kv::run_kvstore(world, o, f.run.comm, [](const report::KvIteration& it) {
    std::cout << report::kv_iteration_line(it) << "\n" << std::flush;
  });
  if (!r.leader) return 0;
  const double bytes = bench::kv::bytes_per_worker(o, r.layout.total_numel);
  const auto summary = report::summarize(r.workers, bytes, r.ceiling_seconds, r.ceiling_bytes,
                                         bench::kv::measure_py_bytes(o, r.layout.total_numel));
  report::print_kv_summary(std::cout, summary, bench::kv::to_string(o.mode), o.workers);
  if (!std::isnan(r.final_error))
    std::cout << fmt::format("# dist_async final values: error {:g} (must be 0)\n", r.final_error);
  // Per node: the roles it holds and its workers' bandwidth, summed.
  std::vector<std::string> roles;
  std::vector<double> figures;
  for (int rank = 0; rank < r.topology.ranks(); ++rank) {
    const bool worker = rank < o.workers;
    roles.push_back(worker ? "worker" : "server");
    std::vector<double> gbps;
    if (worker && rank < static_cast<int>(r.workers.size()))
      for (const auto& it : r.workers[static_cast<std::size_t>(rank)]) gbps.push_back(it.gbps);
    figures.push_back(gbps.empty() ? std::nan("") : stats::percentile(gbps, 50));
  }
  const auto shares = report::node_shares(r.topology.node_of_rank,
                                          launch::describe_nodes(r.topology), roles, figures);
  report::print_node_shares(std::cout, shares, "GB/s (its workers' p50, summed)");
  env["world"] = bench::world_json(world, r.topology);
  if (!f.run.json_path.empty()) {
    nlohmann::ordered_json doc;
    doc["schema"] = "dtbench.kvstore";
    doc["schema_version"] = 1;
    doc["created"] = report::utc_timestamp();
    doc["command"] = original_args();
    doc["env"] = env;
    doc["config"] = config_json(f, r);
    nlohmann::ordered_json workers = nlohmann::ordered_json::array();
    for (std::size_t w = 0; w < r.workers.size(); ++w) {
      nlohmann::ordered_json its = nlohmann::ordered_json::array();
      for (const auto& it : r.workers[w]) its.push_back(report::to_json(it));
      workers.push_back({{"worker", w}, {"iterations", its}});
    }
    doc["workers"] = workers;
    nlohmann::ordered_json servers = nlohmann::ordered_json::array();
    for (std::size_t s = 0; s < r.servers.size(); ++s)
      servers.push_back({{"server", s},
                         {"keys", r.servers[s].keys},
                         {"pushes", r.servers[s].pushes},
                         {"pulls", r.servers[s].pulls},
                         {"bytes_in", r.servers[s].bytes_in},
                         {"bytes_out", r.servers[s].bytes_out}});
    doc["servers"] = servers;
    doc["ceiling"] = {{"what", "raw TensorPipe echo of the same keys, every worker <-> every server at once"},
                      {"bytes_per_round", r.ceiling_bytes},
                      {"seconds", r.ceiling_seconds}};
    auto num = [](double v) { return std::isnan(v) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v); };
    doc["per_node"] = report::to_json(shares, "gbps_p50");
    doc["summary"] = {{"p50_seconds", summary.p50_seconds},
                      {"p50_gbps_per_worker", summary.p50_gbps},
                      {"p50_gbps_per_gpu", summary.p50_gbps_per_gpu},
                      {"ceiling_gbps", num(summary.ceiling_gbps)},
                      {"fraction_of_ceiling", num(summary.p50_gbps / summary.ceiling_gbps)},
                      {"max_error", num(summary.max_error)},
                      {"max_rel_l1_error", num(summary.max_rel_l1_error)},
                      {"final_error", num(r.final_error)},
                      {"max_abs_staleness", num(summary.max_abs_staleness)}};
    report::write_json_atomic(f.run.json_path, doc);
  }
  return 0;
}

}  // namespace

Action register_kvstore(CLI::App& app) {
  auto f = std::make_shared<KvFlags>();
  auto* cmd = app.add_subcommand(
      "kvstore", "Parameter-server push/pull bandwidth (MXNet kvstore tool): GB/s per worker, error");
  add_run_options(*cmd, f->run, /*with_nproc=*/false);
  cmd->add_option("--mode", f->mode, "local, device, dist_sync, dist_async or dist_device_sync")
      ->capture_default_str();
  cmd->add_option("--device", f->kv.device,
                  "Replicas on: cpu, or cuda (the GPU of each worker's LOCAL_RANK; modes local and device)")
      ->capture_default_str();
  cmd->add_option("--workers", f->kv.workers, "Worker ranks (ranks 0..W-1)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--servers", f->kv.servers, "Server ranks for the dist_* modes (ranks W..W+K-1)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--replicas", f->kv.replicas, "Gradient replicas per worker (stand-ins for GPUs)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  auto* network = cmd->add_option("--network", f->network,
                                  "measure.py's arrays: MXNet's ImageNet symbol of this network (resnet), "
                                  "its convolution and fully connected weights and biases")
                      ->capture_default_str();
  auto* layers = cmd->add_option("--num-layers", f->num_layers,
                                 "Depth of --network resnet: 18, 34, 50, 101, 152 (measure.py's default), 200 or 269")
                     ->capture_default_str();
  auto* model = cmd->add_option("--model", f->model,
                                "Instead of --network: arrays shaped like this dtbench model's parameters "
                                "(every one, batch norms included: resnet50 161 arrays)");
  model->excludes(network)->excludes(layers);
  cmd->add_option("--arrays", f->arrays, "Instead of --network/--model: this many arrays of --size bytes")
      ->check(CLI::Range(1, 100000))
      ->excludes(model)
      ->excludes(network)
      ->excludes(layers);
  cmd->add_option("--size", f->size, "Bytes per array with --arrays (e.g. 64M)")->capture_default_str();
  cmd->add_option("--bigarray-bound", f->bigarray,
                  "Arrays with at least this many elements are split over all servers")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--optimizer", f->optimizer, "none (servers return the sum) or sgd (servers update weights)")
      ->capture_default_str();
  cmd->add_option("-n,--iters", f->kv.iters, "Timed iterations")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("-w,--warmup", f->kv.warmup, "Untimed iterations first")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("-c,--check", f->check, "Check every result against the exact value (0/1)")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  cmd->add_flag("--separate-pull", f->kv.separate_pull,
               "dist_sync/dist_device_sync: acknowledge every push and pull each key separately (default: the "
               "last push of a key carries the pull, one request per key)");
  cmd->add_option("--ceiling-iters", f->kv.ceiling_iters,
                  "Rounds of the raw TensorPipe echo (every worker against every server at once) measured before the run (0 = skip)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--transport", f->kv.transport.transport,
                  "TensorPipe transport: auto (shm on one host, uv across), shm or uv")
      ->capture_default_str();
  cmd->add_option("--channel", f->kv.transport.channel,
                  "TensorPipe channel for large arrays: auto (cma, basic fallback), cma or basic")
      ->capture_default_str();
  return [f]() { return run_kvstore(*f); };
}

}  // namespace dtbench::cli
