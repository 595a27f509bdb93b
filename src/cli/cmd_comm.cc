// `dtbench comm`: nccl-tests-style collective bandwidth sweep.
#include <algorithm>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/comm/comm_bench.h"
#include "bench/env_info.h"
#include "cli/commands.h"
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

struct CommFlags {
  RunOptions run;
  std::string min_bytes = "1K";
  std::string max_bytes = "32M";
  double factor = 2;
  std::string increment = "0";
  int iters = 20;
  int warmup = 5;
  int check = 1;
  std::string op = "sum";
  std::string dtype = "float32";
  std::string collective = "allreduce";
  int root = 0;
  std::string placement = "both";
  std::string device = "cpu";
};

// Which backends move which buffers: nccl only GPU tensors, mpi only host
// ones (dtbench calls the MPI C API on host pointers), gloo both.
void check_device_backend(const std::string& device, const std::string& backend) {
  if (backend == "nccl" && device != "cuda")
    throw UsageError("--backend nccl moves GPU buffers: add --device cuda");
  if (backend == "mpi" && device == "cuda")
    throw UsageError("--backend mpi moves host buffers only (dtbench calls the MPI C API on host "
                     "memory); use --backend nccl or gloo with --device cuda");
}

std::vector<comm::Collective> parse_collectives(const std::string& text) {
  if (text == "all") return comm::all_collectives();
  std::vector<comm::Collective> out;
  for (const auto& name : split_list(text)) {
    if (name.empty()) throw UsageError(fmt::format("--collective: empty name in '{}'", text));
    out.push_back(comm::parse_collective(name));
  }
  return out;
}

bench::CommBenchOptions to_bench_options(const CommFlags& f) {
  bench::CommBenchOptions o;
  o.collectives = parse_collectives(f.collective);
  o.sweep.min_bytes = parse_bytes(f.min_bytes, "--min-bytes");
  o.sweep.max_bytes = parse_bytes(f.max_bytes, "--max-bytes");
  o.sweep.factor = f.factor;
  o.sweep.increment = parse_bytes(f.increment, "--step-bytes");
  o.iters = f.iters;
  o.warmup = f.warmup;
  o.check = f.check != 0;
  o.op = comm::parse_op(f.op);
  o.dtype = comm::parse_dtype(f.dtype);
  o.root = f.root;
  o.device = f.device;
  if (f.placement != "both" && f.placement != "in" && f.placement != "out")
    throw UsageError(fmt::format("--placement '{}' must be both, in or out", f.placement));
  o.in_place = f.placement != "out";
  o.out_of_place = f.placement != "in";
  // Checked before any worker starts; with --nproc the world size is known
  // here, otherwise the root is checked again once the world is known.
  bench::validate_comm_options(o, f.run.nproc > 1 ? f.run.nproc : o.root + 1);
  return o;
}

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
  finish_run_options(f.run);
  auto opts = to_bench_options(f);
  check_device_backend(f.device, f.run.comm.backend);
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

Action register_comm(CLI::App& app) {
  auto f = std::make_shared<CommFlags>();
  auto* cmd = app.add_subcommand(
      "comm", "Collective bandwidth sweep (nccl-tests style): time, algbw, busbw, #wrong");
  add_run_options(*cmd, f->run);
  cmd->add_option("-b,--min-bytes", f->min_bytes, "Smallest message (e.g. 8, 1K, 4M)")
      ->capture_default_str();
  cmd->add_option("-e,--max-bytes", f->max_bytes, "Largest message")->capture_default_str();
  cmd->add_option("-f,--step-factor", f->factor, "Multiply the size by this each step")
      ->capture_default_str();
  cmd->add_option("-i,--step-bytes", f->increment,
                  "Add this many bytes each step instead of multiplying (0 = use -f)")
      ->capture_default_str();
  cmd->add_option("-n,--iters", f->iters, "Timed iterations per size")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("-w,--warmup", f->warmup, "Untimed iterations per size")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("-c,--check", f->check, "Verify every result against the exact value (0/1)")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  cmd->add_option("-o,--op", f->op, "Reduction: sum, prod, min, max, avg")->capture_default_str();
  cmd->add_option("-d,--dtype", f->dtype,
                  "Data type: float32, float64, float16, bfloat16, int32, int64")
      ->capture_default_str();
  cmd->add_option("--collective", f->collective,
                  "allreduce, broadcast, reduce, allgather, reduce_scatter, alltoall, sendrecv, "
                  "a comma list, or all")
      ->capture_default_str();
  cmd->add_option("-r,--root", f->root, "Root rank of broadcast and reduce")->capture_default_str();
  cmd->add_option("--device", f->device,
                  "Buffers on: cpu, or cuda (the GPU of each rank's LOCAL_RANK; data made and "
                  "checked there)")
      ->capture_default_str();
  cmd->add_option("--placement", f->placement, "Buffers: both, in (in-place) or out (out-of-place)")
      ->capture_default_str();
  return [f]() { return run_comm(*f); };
}

}  // namespace dtbench::cli
