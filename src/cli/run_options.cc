#include "cli/run_options.h"

#include <net/if.h>
#include <unistd.h>

#include <cstdlib>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/net_route.h"
#include "core/units.h"
#include "launch/binding.h"
#include "launch/launcher.h"
#include "launch/world.h"
#include "report/json_io.h"

namespace dtbench::cli {

void add_run_options(CLI::App& cmd, RunOptions& o, bool with_nproc) {
  if (with_nproc)
    cmd.add_option("--nproc", o.nproc,
                   "Launch this many local ranks (1 = this process only; in a Kubeflow TrainJob's pod "
                   "the default is PET_NPROC_PER_NODE)")
        ->check(CLI::Range(1, 1024))
        ->each([&o](const std::string&) { o.nproc_given = true; })
        ->capture_default_str();
  cmd.add_option("--backend", o.comm.backend, "Communication backend: gloo, mpi or nccl")
      ->capture_default_str();
  cmd.add_option("--timeout", o.timeout_text,
                 "Bound on every rendezvous, collective and barrier wait (e.g. 30s, 500ms, 2m)")
      ->capture_default_str();
  cmd.add_option("--iface", o.comm.iface,
                 "Network interface for gloo, TensorPipe and MPI traffic (default: the one that routes to the master address)");
  cmd.add_option("--json", o.json_path, "Write the JSON report here (rank 0, atomically)");
  cmd.add_option("--bind", o.bind, kBindHelp)->capture_default_str();
}

void finish_run_options(RunOptions& o) {
  comm::require_backend(o.comm.backend);
  o.comm.timeout = parse_duration(o.timeout_text, "--timeout");
  // Checked here, before any worker starts, so a typo is one line, not one per rank.
  if (!o.comm.iface.empty() && if_nametoindex(o.comm.iface.c_str()) == 0)
    throw UsageError(fmt::format("--iface: no network interface named '{}' on this host",
                                 o.comm.iface));
  if (!o.json_path.empty()) report::require_writable_path(o.json_path, "--json");
  const auto bind = launch::parse_bind(o.bind);
  // Ranks that another launcher started are placed by it: --bind would do nothing.
  const auto world = launch::world_from_env(launch::process_env());
  if (bind != launch::Bind::none && world.source != "single" && std::getenv("DTBENCH_LAUNCHED") == nullptr)
    throw UsageError(fmt::format(
        "--bind {}: these ranks were started by {}, which places them (mpirun --bind-to core, "
        "srun --cpu-bind=cores, taskset); dtbench binds only the ranks it starts",
        o.bind, world.source));
}

std::vector<std::vector<int>> plan_local_binding(const std::string& bind, int nproc) {
  const auto b = launch::parse_bind(bind);
  if (b == launch::Bind::none) return {};
  return launch::plan_binding(b, launch::allowed_cores(), nproc);
}

void apply_cpu_plan_from_env() {
  const char* text = std::getenv(launch::kCpuPlanEnv);
  if (text == nullptr) return;
  const auto plan = launch::decode_plan(text);
  const auto world = launch::world_from_env(launch::process_env());
  if (world.local_rank < 0 || world.local_rank >= static_cast<int>(plan.size()))
    throw UsageError(fmt::format("{}='{}' has no CPUs for local rank {}", launch::kCpuPlanEnv, text,
                                 world.local_rank));
  launch::bind_this_process(plan[static_cast<std::size_t>(world.local_rank)]);
  unsetenv(launch::kCpuPlanEnv);
}

}  // namespace dtbench::cli
