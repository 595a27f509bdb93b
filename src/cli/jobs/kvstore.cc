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
#include "cli/jobs.h"
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


std::vector<bench::kv::KvArray> model_arrays(const std::string& name) {
  const auto& entry = models::find_model(name);
  auto model = entry.make(entry.defaults);
  std::vector<bench::kv::KvArray> out;
  for (const auto& p : model->module()->named_parameters())
    out.push_back({p.key(), static_cast<std::size_t>(p.value().numel())});
  return out;
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
  // The flags passed check_kvstore (cmd_kvstore.cc); what needs LibTorch: a
  // --model's parameter arrays, the GPUs.
  auto& o = f.kv;
  if (!f.model.empty()) {
    o.array_source = f.model;
    o.arrays = model_arrays(f.model);
    bench::kv::validate(o);
  }
  rpc::validate(o.transport);  // shm, cma: usable on this host?
  // Workers run on this host when dtbench starts them: one GPU each.
  device::check_available(o.device, o.workers);
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

int kvstore_job(KvFlags& f) { return run_kvstore(f); }

}  // namespace dtbench::cli
