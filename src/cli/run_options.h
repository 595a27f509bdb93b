#pragma once
// Flags every distributed benchmark takes (--nproc, --backend, --timeout,
// --iface, --json), and the self-launch step they share.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/factory.h"  // CommOptions
#include "launch/launcher.h"

namespace CLI {
class App;
}

namespace dtbench::cli {

struct RunOptions {
  // Local workers to launch; 1 runs in this process (or under an external
  // launcher). Default 1.
  int nproc = 1;
  comm::CommOptions comm;
  std::string timeout_text = "60s";
  // Where rank 0 writes the JSON report ("" = none).
  std::string json_path;
  // --bind: none or core (launch/binding.h); applies to ranks dtbench starts.
  std::string bind = "none";
  // --nproc was on the command line (not its default): it wins over
  // PET_NPROC_PER_NODE.
  bool nproc_given = false;
};

// --bind's help, shared by the commands that start ranks.
inline constexpr const char* kBindHelp =
    "Pin each rank dtbench starts: none (the kernel places threads) or core (an equal share of "
    "whole cores of the ones this process may use, like mpirun --bind-to core)";

// The CPU sets for `nproc` local ranks under --bind `bind` (empty for none).
// Throws UsageError (an unknown mode, fewer cores than ranks).
std::vector<std::vector<int>> plan_local_binding(const std::string& bind, int nproc);

// with_nproc = false leaves out --nproc (commands that launch their own workers).
void add_run_options(CLI::App& cmd, RunOptions& opts, bool with_nproc = true);

// Validates the shared flags (backend built in, timeout) and fills
// opts.comm.timeout. Throws UsageError.
void finish_run_options(RunOptions& opts);

// With --nproc N > 1 outside a launched worker, starts N workers running this
// same command line (dtbench's launcher; mpirun for the mpi backend), waits
// for them and returns their exit status. In a Kubernetes pod of a
// Kubeflow TrainJob (PET_NNODES, launch/node_plan.h) it starts this node's
// ranks of the multi-node job instead (PET_NPROC_PER_NODE of them unless
// --nproc is given). Otherwise returns nullopt: the caller runs the benchmark
// in this process. `nproc_implicit`: the rank count follows from role flags
// (kvstore, hybrid), so under an external launcher (mpirun, srun, torchrun)
// its ranks are used as they are, and a pod of a multi-node job is refused
// (use `dtbench launch`, which reads PET_*).
std::optional<int> self_launch(const RunOptions& opts, bool nproc_implicit = false);

// A command that starts only single-node jobs (ddp's sweeps, compare, ...)
// run directly in a pod of a multi-node Kubernetes job (PET_NNODES > 1, not
// under a launcher): refused in one line naming `dtbench launch`, rather
// than run as a job of its own on each node.
void refuse_pod_of_larger_job(const std::string& command);

// One node's launch of a (possibly multi-node) job through dtbench's
// launcher, as `dtbench launch` runs it: node 0 hosts the job's store
// (comm::host_launcher_store), a failed rank is published for the other
// nodes and the store then stays up for `grace`, a stopped one is published
// too. Returns the launch's exit status.
int launch_node(launch::LaunchOptions lo, const std::vector<std::string>& args);

// Starts `nproc` local workers running `args` (args[0] = the executable):
// dtbench's launcher, or mpirun for the mpi backend. Returns their exit status.
// `bind` is --bind's text: for gloo/nccl the launcher pins each worker before
// it execs; for mpi, mpirun places nothing (--bind-to none) and each rank pins
// itself at start-up from the plan in DTBENCH_CPU_PLAN (apply_cpu_plan_from_env).
// `node`: this node's place in a multi-node job (nnodes, node_rank,
// master_addr, master_port, extra_env); the default is a one-node job.
int launch_workers(int nproc, const std::string& backend, const std::string& bind,
                   const std::vector<std::string>& args, const launch::LaunchOptions& node = {});

// In a rank mpirun started for launch_workers: pins this process to its
// local rank's CPUs from DTBENCH_CPU_PLAN, if set. Call first in main().
void apply_cpu_plan_from_env();

// The launcher's on_stopped for node `node_rank`: publishes "rank 2 (pid
// 812) is stopped by signal 19 (...) on node 0 (host)" in the job's store,
// where the waiting ranks' timeout errors read their cause.
std::function<void(const std::string&, const std::string&, int)> publish_stopped(int node_rank);

}  // namespace dtbench::cli
