// `dtbench comm`: nccl-tests-style collective bandwidth sweep.
#include <algorithm>
#include <unistd.h>
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/comm/comm_bench.h"
#include "bench/env_info.h"
#include "cli/commands.h"
#include "cli/jobs.h"
#include "cli/run_options.h"
#include "comm/communicator.h"
#include "comm/factory.h"
#include "comm/store.h"
#include "comm/topology.h"
#include "core/error.h"
#include "core/log.h"
#include "core/net_route.h"
#include "core/units.h"
#include "device/device.h"
#include "launch/binding.h"
#include "launch/world.h"
#include "project/comm_fit.h"
#include "report/comm_reporter.h"
#include "report/env_reporter.h"
#include "report/json_io.h"

namespace dtbench::cli {
namespace {


nlohmann::ordered_json config_json(const CommFlags& f, const bench::CommBenchOptions& o) {
  nlohmann::ordered_json cols = nlohmann::ordered_json::array();
  for (auto c : o.collectives) cols.push_back(comm::to_string(c));
  return {{"backend", f.run.comm.backend},
          {"bind", f.run.bind},
          {"collectives", cols},
          {"min_bytes", o.sweep.min_bytes},
          {"max_bytes", o.sweep.max_bytes},
          {"step_factor", o.sweep.factor},
          {"step_bytes", o.sweep.increment},
          {"iters", o.iters},
          {"warmup", o.warmup},
          {"agg_iters", o.agg_iters},
          {"blocking", o.blocking},
          {"concurrent", o.concurrent},
          {"cuda_graph", o.cuda_graph},
          {"memory", o.memory_report},
          {"split_sizes", o.vsplit.text},
          {"with_compute", o.compute_gemm > 0 ? fmt::format("gemm:{}", o.compute_gemm) : std::string()},
          {"check", o.check},
          {"dtype", comm::to_string(o.dtype)},
          {"op", comm::to_string(o.op)},
          {"root", o.root},
          {"device", o.device},
          {"percentiles", o.percentiles},
          {"spike_mad", o.spike_mad},
          {"run_cycles", o.run_cycles},
          {"average", static_cast<int>(o.average)},
          {"split", o.split.kind == bench::SplitSpec::Kind::kMesh ? std::string() : o.split.text},
          {"groups", o.split.kind == bench::SplitSpec::Kind::kMesh ? o.split.text : std::string()},
          {"inject_delay", o.delay_rank < 0 ? nlohmann::ordered_json(nullptr)
                                            : nlohmann::ordered_json{{"rank", o.delay_rank}, {"us", o.delay_us}}},
          {"iface", f.run.comm.iface},
          {"gloo_threads", f.run.comm.gloo_threads},
          {"timeout_ms", f.run.comm.timeout.count()}};
}

// Where latency gives way to bandwidth, per fitted sweep (project::sweep_fits).
std::string size_words(double b) {
  const auto n = static_cast<std::uint64_t>(b);
  if (n >= (1u << 20) && n % (1u << 20) == 0) return fmt::format("{} MiB", n >> 20);
  if (n >= 1024 && n % 1024 == 0) return fmt::format("{} KiB", n >> 10);
  return fmt::format("{} B", n);
}

std::string fit_line(const project::SweepFit& f) {
  const auto& lb = f.lb;
  std::string where;
  // (The smallest size is latency by construction: the fit's latency is its time.)
  if (lb.latency_bound_bytes >= lb.largest_bytes)
    where = fmt::format("latency rules over the whole sweep (to {})", size_words(lb.largest_bytes));
  else
    where = fmt::format("latency rules up to {}, bandwidth beyond", size_words(lb.latency_bound_bytes));
  return fmt::format("# Latency / bandwidth  : {} ({}, {} ranks): {:.1f} us per step x {} step{}; {} ({:.3f} GB/s bus "
                     "at {} once the steps' latency is taken out)\n",
                     f.collective, f.placement, f.world, f.latency_s * 1e6, lb.steps, lb.steps == 1 ? "" : "s", where,
                     lb.largest_bus_bw / 1e9,
                     size_words(lb.largest_bytes));
}

nlohmann::ordered_json fits_json(const std::vector<project::SweepFit>& fits) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& f : fits)
    out.push_back({{"collective", f.collective},
                   {"placement", f.placement == "in place" ? "in_place" : "out_of_place"},
                   {"ranks", f.world},
                   {"latency_us_per_step", f.latency_s * 1e6},
                   {"steps", f.lb.steps},
                   {"latency_bound_bytes", f.lb.latency_bound_bytes},
                   {"largest_bytes", f.lb.largest_bytes},
                   {"largest_bus_gbs", f.lb.largest_bus_bw / 1e9}});
  return out;
}

// The variables that steer the backends (NCCL_*, GLOO_*, TORCH_NCCL_*, ...),
// as this rank sees them.
nlohmann::ordered_json backend_variables() {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  std::vector<std::pair<std::string, std::string>> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = kv.substr(0, eq);
    // (Open MPI's transport choices, not the many OMPI_MCA_* mpirun sets for itself.)
    for (const char* prefix : {"NCCL_", "GLOO_", "TORCH_NCCL_", "TORCH_GLOO_", "TP_", "UCX_", "FI_", "OMPI_MCA_btl",
                               "OMPI_MCA_pml", "OMPI_MCA_coll", "OMPI_MCA_osc", "CUDA_VISIBLE_DEVICES",
                               "OMP_NUM_THREADS"})
      if (name.rfind(prefix, 0) == 0) {
        vars.emplace_back(name, kv.substr(eq + 1));
        break;
      }
  }
  std::sort(vars.begin(), vars.end());
  for (const auto& [k, v] : vars) j[k] = v;
  return j;
}

std::string backend_version(const std::string& name) {
  for (const auto& b : comm::backends())
    if (b.name == name) return b.version;
  return "";
}


int run_comm(CommFlags& f) {
  auto opts = comm_bench_options(f);  // the command's checks passed (cmd_comm.cc)
  device::check_available(f.device, std::max(1, f.run.nproc));
  if (auto code = self_launch(f.run)) return *code;

  // Under mpirun without MASTER_ADDR rank 0 publishes the store's address over MPI.
  const auto world = comm::resolve_master(launch::world_from_env(launch::process_env()), f.run.comm);
  bench::set_rank_threads(world.local_world_size);
  log::set_rank(world.world_size > 1 ? world.rank : -1);
  bench::validate_comm_options(opts, world.world_size);
  const bool leader = world.rank == 0;
  auto env = bench::collect_env();
  opts.device_index = world.local_rank;
  // With --split: a communicator over every rank and one over this rank's
  // group, both meeting through the job's store.
  // With --concurrent K, K - 1 more over this rank's group (or every rank).
  std::unique_ptr<comm::Communicator> comm, group_comm;
  std::vector<std::unique_ptr<comm::Communicator>> lanes;
  std::vector<std::vector<int>> groups;
  if (opts.split.kind == bench::SplitSpec::Kind::kNone && opts.concurrent == 1) {
    comm = comm::make_communicator(world, f.run.comm);
  } else {
    if (opts.split.kind != bench::SplitSpec::Kind::kNone) groups = bench::split_groups(opts.split, world.world_size);
    auto store = comm::connect_store(world, f.run.comm.timeout);
    comm = comm::make_group_communicator(world, f.run.comm, {store, "dtbench/comm/all", world.rank, world.world_size});
    const std::vector<std::vector<int>> mine_of =
        groups.empty() ? std::vector<std::vector<int>>{{}} : groups;  // {} : every rank
    for (std::size_t g = 0; g < mine_of.size(); ++g) {
      const auto& members = mine_of[g];
      int index = world.rank, size = world.world_size;
      if (!members.empty()) {
        const auto it = std::find(members.begin(), members.end(), world.rank);
        if (it == members.end()) continue;
        index = static_cast<int>(it - members.begin());
        size = static_cast<int>(members.size());
        group_comm =
            comm::make_group_communicator(world, f.run.comm, {store, fmt::format("dtbench/comm/group{}", g), index, size});
      }
      for (int l = 1; l < opts.concurrent; ++l)
        lanes.push_back(comm::make_group_communicator(
            world, f.run.comm, {store, fmt::format("dtbench/comm/lane{}/group{}", l, g), index, size}));
    }
  }
  opts.topology = comm::gather_topology(*comm);
  if (opts.topology.nodes() > 1) {
    // The link ceiling streams from the address the backend uses: --iface's,
    // or the one that routes to the master.
    try {
      opts.link_ip = f.run.comm.iface.empty() ? net::route_to(world.master_addr).local_addr
                                              : net::interface_address(f.run.comm.iface);
    } catch (const std::exception&) {
      opts.link_ip.clear();  // no ceiling; a note says so
    }
  }
  env["world"] = bench::world_json(world, opts.topology);
  // Where each rank runs (its allowed CPUs) and what steers the backend: in
  // the JSON report's env, not in the console header.
  const auto cpus = comm::gather_strings(*comm, launch::describe_cpus(launch::current_affinity()));
  nlohmann::ordered_json run_env;
  run_env["placement"] = nlohmann::ordered_json::array();
  for (int r = 0; r < world.world_size; ++r)
    run_env["placement"].push_back({{"rank", r}, {"node", opts.topology.node_of_rank[static_cast<std::size_t>(r)]},
                                    {"cpus", cpus[static_cast<std::size_t>(r)]}});
  run_env["backend_version"] = backend_version(comm->backend());
  run_env["backend_variables"] = backend_variables();
  const std::string label = env["world"]["label"];

  report::CommConsoleReporter console(std::cout, opts.percentiles);
  // The --json report is rewritten (atomically) after every row with
  // "complete": false, so a run ended early (a scheduler's time limit, a
  // signal, a failed peer) leaves a valid report of the rows it finished.
  std::vector<report::CommRecord> done;
  bench::CommBenchResult result;
  auto write_report = [&](bool complete, const std::vector<std::string>& skipped) {
    if (!leader) return;
    if (!f.csv_path.empty()) {
      std::ostringstream csv;
      report::write_comm_csv(csv, done, f.average);
      report::write_text_atomic(f.csv_path, csv.str());
    }
    if (f.run.json_path.empty()) return;
    nlohmann::ordered_json doc;
    doc["schema"] = "dtbench.comm";
    doc["schema_version"] = 3;
    doc["created"] = report::utc_timestamp();
    doc["complete"] = complete;
    doc["command"] = original_args();
    doc["env"] = env;
    for (const auto& [k, v] : run_env.items()) doc["env"][k] = v;
    doc["config"] = config_json(f, opts);
    nlohmann::ordered_json recs = nlohmann::ordered_json::array();
    for (const auto& r : done) recs.push_back(report::to_json(r));
    doc["results"] = recs;
    doc["skipped"] = skipped;
    doc["notes"] = result.notes;
    doc["seed"] = result.seed;
    doc["clock_error_us"] = result.clock_error_us;
    // The fit assumes one collective at a time: none with --concurrent.
    doc["latency_bandwidth"] =
        fits_json(opts.concurrent == 1 ? project::sweep_fits(done, world.world_size) : decltype(project::sweep_fits(done, 1)){});
    if (!result.memory.empty()) {
      nlohmann::ordered_json mem = nlohmann::ordered_json::array();
      for (std::size_t r = 0; r < result.memory.size(); ++r) {
        const auto& m = result.memory[r];
        mem.push_back({{"rank", r},
                       {"buffers_bytes", m.buffers_bytes},
                       {"peak_bytes", m.peak_bytes},
                       {"reserved_peak_bytes", m.reserved_peak_bytes < 0 ? nlohmann::ordered_json(nullptr)
                                                                          : nlohmann::ordered_json(m.reserved_peak_bytes)}});
      }
      doc["memory"] = mem;
    }
    doc["summary"] = {{"avg_busbw_gbs", report::average_busbw(done)},
                      {"wrong", report::any_checked(done) || done.empty()
                                    ? nlohmann::ordered_json(report::total_wrong(done))
                                    : nlohmann::ordered_json(nullptr)}};
    report::write_json_atomic(f.run.json_path, doc);
  };
  if (leader) {
    report::print_env(std::cout, env);
    std::cout << fmt::format(
        "# dtbench comm: {} ranks ({}), backend {}, buffers on {}, {} iters, {} warm-up, agg iters {}, check {}\n#\n",
        world.world_size, label, comm->backend(),
        device::describe(device::select(opts.device, opts.device_index)), opts.iters, opts.warmup, opts.agg_iters,
        opts.check ? "on" : "off");
    if (groups.size() > 1) {
      std::string text;
      for (std::size_t g = 0; g < groups.size(); ++g) {
        text += fmt::format("{}g{} = rank{} ", g == 0 ? "" : "; ", g, groups[g].size() > 1 ? "s" : "");
        for (std::size_t k = 0; k < groups[g].size(); ++k) text += fmt::format("{}{}", k ? "," : "", groups[g][k]);
      }
      std::cout << fmt::format("# {}: {} groups, each running the collective at the same time: {}\n#\n",
                               bench::describe_split(opts.split), groups.size(), text);
    }
    console.header();
  }
  std::vector<comm::Communicator*> more_lanes;
  for (auto& l : lanes) more_lanes.push_back(l.get());
  result = bench::run_comm_bench(*comm, group_comm ? *group_comm : *comm, groups, opts, [&](const report::CommRecord& r, const bench::CommBenchResult& so_far) {
    result.seed = so_far.seed;
    result.notes = so_far.notes;
    result.clock_error_us = so_far.clock_error_us;
    if (!leader) return;
    console.row(r);
    done.push_back(r);
    write_report(false, {});
  }, more_lanes);
  const auto wrong = report::total_wrong(result.records);
  if (result.records.empty() && !result.skipped.empty()) {
    // Every collective asked for was skipped (a type or op the backend
    // lacks): bad input, not an empty success.
    // The report says so too (complete, no rows, the skipped list); rank 0
    // alone says why, the others end with the same status.
    std::string why;
    for (const auto& s : result.skipped) why += (why.empty() ? "" : "; ") + s;
    if (leader) write_report(true, result.skipped);
    comm->barrier();
    if (!leader) return 2;
    throw UsageError("nothing to run: " + why);
  }
  if (leader) {
    const auto node_names = launch::describe_nodes(opts.topology);
    console.footer(result.records, result.skipped, result.notes, node_names, opts.topology.node_of_rank);
    console.nodes(result.records, node_names, opts.topology.node_of_rank);
    if (opts.concurrent == 1)
      for (const auto& fit : project::sweep_fits(result.records, world.world_size)) std::cout << fit_line(fit);
    std::cout << fmt::format("# Test data seed       : {} (--seed {} repeats it)\n", result.seed, result.seed);
    if (!result.memory.empty()) {
      std::size_t most = 0;
      for (std::size_t r = 0; r < result.memory.size(); ++r)
        if (result.memory[r].peak_bytes > result.memory[most].peak_bytes) most = r;
      const auto& m = result.memory[most];
      const auto mib = [](std::int64_t b) { return static_cast<double>(b) / (1 << 20); };
      std::cout << fmt::format("# Memory per rank      : buffers {:.1f} MiB; allocator peak {:.1f} MiB (rank {}, the "
                               "most){}\n",
                               mib(result.memory[0].buffers_bytes), mib(m.peak_bytes), most,
                               m.reserved_peak_bytes >= 0
                                   ? fmt::format(", {:.1f} MiB reserved by the CUDA caching allocator",
                                                 mib(m.reserved_peak_bytes))
                                   : "");
    }
    done = result.records;
    write_report(true, result.skipped);
  }
  comm->barrier();
  if (wrong != 0)
    throw VerificationError(fmt::format("{} element(s) differ from the expected results", wrong));
  return 0;
}

}  // namespace

int comm_job(CommFlags& f) { return run_comm(f); }

}  // namespace dtbench::cli
