// `dtbench comm`: nccl-tests-style collective bandwidth sweep.
// The command's flags; its run is comm_job (cli/jobs/comm.cc).
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/jobs.h"
#include "cli/run_options.h"
#include "core/error.h"
#include "core/units.h"

namespace dtbench::cli {
namespace {

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

}  // namespace

bench::CommBenchOptions comm_bench_options(const CommFlags& f) {
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
  check_device_backend(f.device, f.run.comm.backend);
  return o;
}

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
  return [f]() {
    finish_run_options(f->run);
    comm_bench_options(*f);
    return comm_job(*f);
  };
}

}  // namespace dtbench::cli
