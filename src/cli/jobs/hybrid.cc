// `dtbench hybrid`: PyTorch's DDP + RPC benchmark — embedding tables on
// parameter servers (dtbench's TensorPipe RPC), an FC stack under DDP.
#include <cmath>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/env_info.h"
#include "bench/hybrid/hybrid_bench.h"
#include "cli/commands.h"
#include "cli/jobs.h"
#include "comm/factory.h"
#include "cli/run_options.h"
#include "core/error.h"
#include "device/device.h"
#include "core/log.h"
#include "launch/world.h"
#include "report/env_reporter.h"
#include "report/json_io.h"
#include "report/node_share.h"
#include "rpc/transport.h"
#include "stats/stats.h"

namespace dtbench::cli {
namespace {


nlohmann::ordered_json config_json(const HybridFlags& f, const std::string& transport) {
  const auto& o = f.h;
  return {{"trainers", o.trainers},       {"servers", o.servers},
          {"num_embeddings", o.num_embeddings}, {"embedding_dim", o.embedding_dim},
          {"epochs", o.epochs},           {"warmup", o.warmup},
          {"batches", o.batches},         {"lookup", o.lookup},
          {"lr", std::stod(fmt::format("{}", o.lr))},  // the float as typed, not widened
          {"seed", o.seed},               {"check", o.check},
          {"reducer", "ddp"},             {"backend", f.run.comm.backend},
          {"bind", f.run.bind},           {"device", o.device},
          {"transport", transport},       {"timeout_ms", f.run.comm.timeout.count()}};
}

int run_hybrid(HybridFlags& f) {
  // The flags passed check_hybrid (cmd_hybrid.cc); what needs LibTorch: the GPUs.
  auto& o = f.h;
  rpc::validate(o.transport);  // shm, cma: usable on this host?
  device::check_available(o.device, 1);
  f.run.nproc = bench::hybrid::world_size_for(o);
  if (auto code = self_launch(f.run, /*nproc_implicit=*/true)) return *code;
  // Under mpirun without MASTER_ADDR rank 0 publishes the store's address over MPI.
  const auto world = comm::resolve_master(launch::world_from_env(launch::process_env()), f.run.comm);
  bench::set_rank_threads(world.local_world_size);
  log::set_rank(world.world_size > 1 ? world.rank : -1);
  o.transport.listen_host = rpc::listen_host_for(world.master_addr, f.run.comm.iface);
  auto env = bench::collect_env();
  env["world"] = bench::world_json(world);
  if (world.rank == 0) {
    report::print_env(std::cout, env);
    std::cout << fmt::format(
        "# dtbench hybrid: 1 master, {} trainer(s), {} parameter server(s), each an EmbeddingBag of {} x {} "
        "(sum); {} epochs of {} batches + {} warm-up; lookups {}\n",
        o.trainers, o.servers, o.num_embeddings, o.embedding_dim, o.epochs, o.batches, o.warmup,
        o.lookup == "sequential" ? "one server after another" : "every server at once")
              << std::flush;
  }
  auto r = bench::hybrid::run_hybrid(world, o, f.run.comm);
  if (!r.leader) return 0;
  report::print_hybrid_table(std::cout, r.trainers);
  double ceiling_p50 = std::nan(""), alone_p50 = std::nan("");
  if (!r.ceiling_seconds.empty()) {
    ceiling_p50 = stats::percentile(r.ceiling_seconds, 50);
    alone_p50 = stats::percentile(r.ceiling_alone_seconds, 50);
    std::vector<double> lookups;
    for (const auto& t : r.trainers) lookups.insert(lookups.end(), t.lookup_seconds.begin(), t.lookup_seconds.end());
    const double lookup_p50 = stats::percentile(lookups, 50);
    std::cout << fmt::format(
        "# lookup p50 {:.1f} us vs raw TensorPipe round p50 {:.1f} us alone ({:.2f}x), {:.1f} us with "
        "every trainer at once ({:.2f}x); a round echoes {} B with each of {} server(s), {}\n",
        lookup_p50 * 1e6, alone_p50 * 1e6, lookup_p50 / alone_p50, ceiling_p50 * 1e6,
        lookup_p50 / ceiling_p50, r.ceiling_bytes, o.servers,
        o.lookup == "sequential" ? "one after another" : "all at once");
  }
  if (r.checked)
    std::cout << fmt::format(
        "# check: every lookup ({}) equals PyTorch's EmbeddingBag on the replayed tables, and the final "
        "tables the replay of {} steps (max |diff| {:.3g}, allowed {:.3g}); FC replicas identical\n",
        r.lookups_checked, r.steps_checked, r.max_table_diff, r.tolerance);
  // Per node: its roles and its trainers' bags/s, summed.
  std::vector<std::string> roles;
  std::vector<double> figures;
  for (int rank = 0; rank < r.topology.ranks(); ++rank) {
    const bool trainer = rank >= 1 && rank <= o.trainers;
    roles.push_back(rank == 0 ? "master" : trainer ? "trainer" : "server");
    double fig = std::nan("");
    for (const auto& t : r.trainers)
      if (trainer && t.trainer == rank - 1)
        fig = report::hybrid_row("", t.epoch_seconds, t.last_epoch_bags).bags_per_s[0];
    figures.push_back(fig);
  }
  const auto shares = report::node_shares(r.topology.node_of_rank,
                                          launch::describe_nodes(r.topology), roles, figures);
  report::print_node_shares(std::cout, shares, "bags/s (its trainers' p50, summed)");
  env["world"] = bench::world_json(world, r.topology);
  if (!f.run.json_path.empty()) {
    nlohmann::ordered_json doc;
    doc["schema"] = "dtbench.hybrid";
    doc["schema_version"] = 2;
    doc["created"] = report::utc_timestamp();
    doc["command"] = original_args();
    doc["env"] = env;
    doc["config"] = config_json(f, r.transport);
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    auto row_json = [](const report::HybridRow& row) {
      return nlohmann::ordered_json{
          {"p50", row.p50}, {"p75", row.p75}, {"p90", row.p90}, {"p95", row.p95},
          {"bags_per_s", {row.bags_per_s[0], row.bags_per_s[1], row.bags_per_s[2], row.bags_per_s[3]}}};
    };
    for (const auto& t : r.trainers) {
      auto j = report::to_json(t);
      j.update(row_json(report::hybrid_row(fmt::format("Trainer{}", t.trainer), t.epoch_seconds, t.last_epoch_bags)));
      rows.push_back(j);
    }
    doc["trainers"] = rows;
    doc["per_node"] = report::to_json(shares, "bags_per_s");
    auto num = [](double v) { return std::isnan(v) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v); };
    doc["all"] = row_json(report::hybrid_all_row(r.trainers));
    doc["ceiling"] = {{"what", o.lookup == "sequential"
                                   ? "raw TensorPipe echo of one lookup reply's size with each server, one after another"
                                   : "raw TensorPipe echo of one lookup reply's size with every server at once"},
                      {"bytes_per_message", r.ceiling_bytes},
                      {"seconds", r.ceiling_seconds},
                      {"p50_seconds", num(ceiling_p50)},
                      {"alone_seconds", r.ceiling_alone_seconds},
                      {"alone_p50_seconds", num(alone_p50)}};
    doc["check"] = {{"checked", r.checked},
                    {"lookups", r.lookups_checked},
                    {"steps", r.steps_checked},
                    {"max_abs_diff", num(r.max_table_diff)},
                    {"tolerance", r.tolerance},
                    {"fc_replicas_identical", r.fc_replicas_identical}};
    report::write_json_atomic(f.run.json_path, doc);
  }
  return 0;
}

}  // namespace

int hybrid_job(HybridFlags& f) { return run_hybrid(f); }

}  // namespace dtbench::cli
