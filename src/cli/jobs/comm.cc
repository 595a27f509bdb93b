// `dtbench comm`: nccl-tests-style collective bandwidth sweep.
#include <algorithm>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/comm/comm_bench.h"
#include "bench/env_info.h"
#include "cli/commands.h"
#include "cli/jobs.h"
#include "cli/run_options.h"
#include "comm/communicator.h"
#include "comm/factory.h"
#include "comm/topology.h"
#include "core/error.h"
#include "core/log.h"
#include "core/units.h"
#include "device/device.h"
#include "launch/world.h"
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
          {"check", o.check},
          {"dtype", comm::to_string(o.dtype)},
          {"op", comm::to_string(o.op)},
          {"root", o.root},
          {"device", o.device},
          {"timeout_ms", f.run.comm.timeout.count()}};
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
  auto comm = comm::make_communicator(world, f.run.comm);
  opts.topology = comm::gather_topology(*comm);
  env["world"] = bench::world_json(world, opts.topology);
  const std::string label = env["world"]["label"];

  report::CommConsoleReporter console(std::cout);
  // The --json report is rewritten (atomically) after every row with
  // "complete": false, so a run ended early (a scheduler's time limit, a
  // signal, a failed peer) leaves a valid report of the rows it finished.
  std::vector<report::CommRecord> done;
  auto write_report = [&](bool complete, const std::vector<std::string>& skipped) {
    if (!leader || f.run.json_path.empty()) return;
    nlohmann::ordered_json doc;
    doc["schema"] = "dtbench.comm";
    doc["schema_version"] = 1;
    doc["created"] = report::utc_timestamp();
    doc["complete"] = complete;
    doc["command"] = original_args();
    doc["env"] = env;
    doc["config"] = config_json(f, opts);
    nlohmann::ordered_json recs = nlohmann::ordered_json::array();
    for (const auto& r : done) recs.push_back(report::to_json(r));
    doc["results"] = recs;
    doc["skipped"] = skipped;
    doc["summary"] = {{"avg_busbw_gbs", report::average_busbw(done)},
                      {"wrong", report::total_wrong(done)}};
    report::write_json_atomic(f.run.json_path, doc);
  };
  if (leader) {
    report::print_env(std::cout, env);
    std::cout << fmt::format(
        "# dtbench comm: {} ranks ({}), backend {}, buffers on {}, {} iters, {} warm-up, check {}\n#\n",
        world.world_size, label, comm->backend(),
        device::describe(device::select(opts.device, opts.device_index)), opts.iters, opts.warmup,
        opts.check ? "on" : "off");
    console.header();
  }
  auto result = bench::run_comm_bench(*comm, opts, [&](const report::CommRecord& r) {
    if (!leader) return;
    console.row(r);
    done.push_back(r);
    write_report(false, {});
  });
  const auto wrong = report::total_wrong(result.records);
  if (leader) {
    console.footer(result.records, result.skipped);
    console.nodes(result.records, launch::describe_nodes(opts.topology));
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
