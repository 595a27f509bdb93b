// `dtbench comm`: nccl-tests-style collective bandwidth sweep.
// The command's flags; its run is comm_job (cli/jobs/comm.cc).
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/jobs.h"
#include "cli/run_options.h"
#include "comm/backends.h"
#include "core/error.h"
#include "core/units.h"
#include "report/json_io.h"

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
  if (text == "all") {  // every collective; pingpong (2 ranks) and barrier (no data) only by name
    std::vector<comm::Collective> all;
    for (const auto c : comm::all_collectives())
      if (c != comm::Collective::kPingpong && c != comm::Collective::kBarrier) all.push_back(c);
    return all;
  }
  std::vector<comm::Collective> out;
  for (const auto& name : split_list(text)) {
    if (name.empty()) throw UsageError(fmt::format("--collective: empty name in '{}'", text));
    out.push_back(comm::parse_collective(name));
  }
  return out;
}

std::vector<double> parse_percentiles(const std::string& text) {
  std::vector<double> out;
  for (const auto& item : split_list(text)) {
    std::size_t used = 0;
    double q = -1;
    try {
      q = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || !(q >= 0 && q <= 100))
      throw UsageError(fmt::format("--percentiles: '{}' is not a percentile within 0-100 (e.g. 50,99)", item));
    out.push_back(q);
  }
  if (out.empty()) throw UsageError("--percentiles: give at least one (e.g. 50,99)");
  return out;
}

// "RANK:MICROSECONDS".
void parse_delay(const std::string& text, int* rank, double* us) {
  const auto colon = text.find(':');
  std::size_t a = 0, b = 0;
  try {
    if (colon != std::string::npos) {
      *rank = std::stoi(text.substr(0, colon), &a);
      *us = std::stod(text.substr(colon + 1), &b);
    }
  } catch (const std::exception&) {
    a = b = 0;
  }
  if (colon == std::string::npos || a != colon || b != text.size() - colon - 1 || *rank < 0 || !(*us > 0) ||
      *us > 60e6)
    throw UsageError(fmt::format(
        "--inject-delay '{}' must be RANK:MICROSECONDS (a rank, and a delay above 0 and at most 60 s, e.g. 1:2000)",
        text));
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
  o.seed = static_cast<std::uint64_t>(f.seed);
  o.percentiles = parse_percentiles(f.percentiles);
  o.spike_mad = f.spike_mad;
  o.run_cycles = f.run_cycles;
  o.agg_iters = f.agg_iters;
  o.blocking = f.blocking != 0;
  o.concurrent = f.concurrent;
  if (o.concurrent > 1 && f.run.comm.backend == "mpi")
    throw UsageError("--concurrent needs --backend gloo or nccl (dtbench's mpi backend has one communicator, "
                     "MPI_COMM_WORLD)");
  o.cuda_graph = f.cuda_graph;
  o.memory_report = f.memory != 0;
  o.vsplit = bench::parse_vsplit(f.split_sizes);
  if (!f.with_compute.empty()) {
    const std::string prefix = "gemm:";
    std::int64_t n = 0;
    std::size_t used = 0;
    try {
      if (f.with_compute.rfind(prefix, 0) == 0) n = std::stoll(f.with_compute.substr(prefix.size()), &used);
    } catch (const std::exception&) {
      n = 0;
    }
    if (n <= 0 || used == 0 || prefix.size() + used != f.with_compute.size())
      throw UsageError(fmt::format("--with-compute '{}': give gemm:N (N x N float32 products, e.g. gemm:512)",
                                   f.with_compute));
    o.compute_gemm = n;
  }
  if (f.average < 0 || f.average > 3)
    throw UsageError(fmt::format("--average {} must be 0 (rank 0), 1 (average), 2 (min) or 3 (max)", f.average));
  o.average = static_cast<bench::RowTime>(f.average);
  if (!f.inject_delay.empty()) parse_delay(f.inject_delay, &o.delay_rank, &o.delay_us);
  o.split = f.groups.empty() ? bench::parse_split(f.split) : bench::parse_groups(f.groups);
  if (!f.csv_path.empty()) report::require_writable_path(f.csv_path, "--csv");
  if (o.split.kind != bench::SplitSpec::Kind::kNone && f.run.nproc > 1) {
    std::size_t smallest = static_cast<std::size_t>(f.run.nproc);
    for (const auto& g : bench::split_groups(o.split, f.run.nproc)) smallest = std::min(smallest, g.size());
    if (o.root >= static_cast<int>(smallest))
      throw UsageError(fmt::format("--root {} is not a rank of every {} group (the smallest has {} rank(s))",
                                   o.root, bench::describe_split(o.split), smallest));
  }
  if (o.split.kind != bench::SplitSpec::Kind::kNone && f.run.comm.backend == "mpi")
    throw UsageError(fmt::format("{} needs --backend gloo or nccl (dtbench's mpi backend runs on MPI_COMM_WORLD only)",
                                 o.split.kind == bench::SplitSpec::Kind::kMesh ? "--groups" : "--split"));
  // Checked before any worker starts; with --nproc the world size is known
  // here, otherwise the root is checked again once the world is known.
  bench::validate_comm_options(o, f.run.nproc > 1 ? f.run.nproc : std::max(o.root, o.delay_rank) + 1);
  check_device_backend(f.device, f.run.comm.backend);
  for (const char* blocking : {"TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT"}) {
    const char* v = std::getenv(blocking);
    if (o.cuda_graph > 0 && v != nullptr && std::string(v) != "0" && !std::string(v).empty())
      throw UsageError(fmt::format("--cuda-graph with {}={}: a blocking wait queries the GPU from the host, which a "
                                   "graph capture forbids; unset it for -G",
                                   blocking, v));
  }
  if (o.cuda_graph > 0 && f.run.comm.backend != "nccl")
    throw UsageError(fmt::format("--cuda-graph captures NCCL's kernels on a GPU into a CUDA graph: it needs --backend "
                                 "nccl --device cuda (this run: --backend {}, --device {})",
                                 f.run.comm.backend, f.device));
  if (comm::is_float8(o.dtype) && f.run.comm.backend != "nccl")
    throw UsageError(fmt::format("-d {}: {} has no float8 type; float8 runs on --backend nccl (NCCL 2.24 or later, "
                                 "GPUs of compute capability 8.9 or later)",
                                 comm::to_string(o.dtype), f.run.comm.backend));
  // Nothing to measure: every collective asked for out of place only, and
  // the backend has no out-of-place form of any.
  if (!o.in_place) {
    std::string why;
    for (const auto c : o.collectives) {
      why = comm::out_of_place_reason(f.run.comm.backend, c);
      if (why.empty()) break;
    }
    if (!why.empty())
      throw UsageError(fmt::format("nothing to measure: --placement out, and {}; use --placement in or both{}", why,
                                   f.run.comm.backend == "gloo" ? ", or --backend mpi" : ""));
  }
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
                  "Data type: float32, float64, float16, bfloat16, int32, int64, int8, uint8, bool (reductions "
                  "logical: sum/max or, prod/min and), float8_e4m3, float8_e5m2 (nccl only)")
      ->capture_default_str();
  cmd->add_option("--collective", f->collective,
                  "allreduce, broadcast, reduce, allgather, reduce_scatter, alltoall, sendrecv, gather, "
                  "scatter, alltoallv, allgatherv, reduce_scatter_v (uneven parts: --split-sizes), barrier, "
                  "pingpong (point to point between 2 ranks; pair more with --split), a comma list, or all "
                  "(every one but pingpong and barrier)")
      ->capture_default_str();
  cmd->add_option("-r,--root", f->root, "Root rank of broadcast, reduce, gather and scatter")->capture_default_str();
  cmd->add_option("--device", f->device,
                  "Buffers on: cpu, or cuda (the GPU of each rank's LOCAL_RANK; data made and "
                  "checked there)")
      ->capture_default_str();
  cmd->add_option("--placement", f->placement, "Buffers: both, in (in-place) or out (out-of-place)")
      ->capture_default_str();
  cmd->add_option("--seed", f->seed,
                  "Test data seed (0 = a new one each run; the footer and JSON name the one used)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--csv", f->csv_path,
                  "Write the table as CSV here (rank 0, atomically, after every row): nccl-tests' column names, "
                  "a line per row and placement");
  cmd->add_option("--percentiles", f->percentiles,
                  "Percentiles of every rank's every iteration shown per row (comma list)")
      ->capture_default_str();
  cmd->add_option("--spike-mad", f->spike_mad,
                  "An iteration beyond its rank's median + this many MADs is a spike")
      ->capture_default_str();
  cmd->add_option("-m,--agg-iters", f->agg_iters,
                  "Operations per timed iteration, issued back to back and waited together; time is per "
                  "operation (nccl-tests' -m)")
      ->capture_default_str();
  cmd->add_option("-z,--blocking", f->blocking,
                  "1: wait for each of an iteration's -m operations before issuing the next; 0: issue them all, "
                  "then wait. dtbench waits at the end of every iteration either way (each is a sample): every "
                  "row is what nccl-tests times with -z 1")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  cmd->add_option("--concurrent", f->concurrent,
                  "K communicators over the same ranks (each group's, with --split/--groups) run each collective "
                  "at once, each on the next buffer window (sharing one where fewer fit); algbw and busbw count all K messages "
                  "(unlike PARAM's --num-pgs, which sends successive iterations to the next group in turn)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("-G,--cuda-graph", f->cuda_graph,
                  "N > 0: capture each row's -n iterations into a CUDA graph once and launch it N times, a sample "
                  "per launch (nccl-tests' -G; --backend nccl --device cuda only); 0: no graph")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("--with-compute", f->with_compute,
                  "gemm:N: time each row again while a thread of each rank multiplies N x N matrices, then "
                  "the products alone: what running beside computation costs each");
  cmd->add_option("--split-sizes", f->split_sizes,
                  "Uneven parts: uniform, skewed (alltoallv: rank i sends rank j in proportion to 1 + (i+j) mod "
                  "n; allgatherv, reduce_scatter_v: rank i's part in proportion to 1 + i), random or random:SEED "
                  "(weights 1-8)")
      ->capture_default_str();
  cmd->add_option("-M,--memory", f->memory,
                  "1: report each rank's buffer bytes and its allocator's peak (footer and JSON \"memory\")")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  cmd->add_option("-N,--run-cycles", f->run_cycles, "Passes over the whole sweep (to see drift)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("-a,--average", f->average,
                  "Which time a row shows (its algbw and busbw follow), as nccl-tests' -a: 0 = rank 0's mean, "
                  "1 = the mean over the ranks, 2 = the fastest rank's, 3 = the slowest rank's")
      ->capture_default_str();
  auto* split = cmd->add_option("--split", f->split,
                  "Groups that each run the collective at once, as nccl-tests' NCCL_TESTS_SPLIT: mod:N (rank mod "
                  "N), div:N (rank div N: runs of N ranks), and:MASK (rank & MASK)");
  cmd->add_option("--groups", f->groups,
                  "A layout's groups by name, each running the collective at once, in `dtbench train`'s mesh "
                  "order (pp, dp, tp; tp innermost): DIM[=K][,DIM=K...] over tp, dp, pp, the first naming the "
                  "groups that run: tp=2 (pairs of consecutive ranks), dp,tp=2 (the ranks 2 apart)")
      ->excludes(split);
  cmd->add_option("--inject-delay", f->inject_delay,
                  "RANK:MICROSECONDS: that rank sleeps this long before each timed iteration (a straggler "
                  "on purpose: see how the late-rank analysis names it)");
  return [f]() {
    finish_run_options(f->run);
    comm_bench_options(*f);
    return comm_job(*f);
  };
}

}  // namespace dtbench::cli
