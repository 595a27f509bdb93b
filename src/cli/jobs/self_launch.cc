// How a command starts its ranks: --nproc's local workers (dtbench's
// launcher, or mpirun for the mpi backend), a Kubernetes pod's share of a
// multi-node job, and one node of a launch, whose launcher hosts the job's
// store (a c10d TCPStore: this is why it runs in dtbench-torch).
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/run_options.h"
#include "comm/store.h"
#include "core/error.h"
#include "core/net_route.h"
#include "launch/binding.h"
#include "launch/launcher.h"
#include "launch/node_plan.h"
#include "launch/world.h"

namespace dtbench::cli {

namespace {

// The Kubernetes plan of a pod this process runs in directly (no launcher
// started it), or an empty plan. `with_nproc`: read PET_NPROC_PER_NODE (not
// when --nproc was given, or for a command that only refuses).
launch::NodePlan pod_plan(bool with_nproc) {
  if (std::getenv("DTBENCH_LAUNCHED") != nullptr) return {};
  if (launch::world_from_env(launch::process_env()).source != "single") return {};
  const auto env = launch::process_env();
  return launch::node_plan_from_env([&](const std::string& name) -> std::optional<std::string> {
    if (name == "PET_NPROC_PER_NODE" && !with_nproc) return std::nullopt;
    return env(name);
  });
}

}  // namespace

void refuse_pod_of_larger_job(const std::string& command) {
  const auto plan = pod_plan(false);
  if (plan.nnodes && *plan.nnodes > 1)
    throw UsageError(fmt::format(
        "{}: this pod is one node of a {}-node job ({}), and `dtbench {}` starts its jobs on one node: "
        "run `dtbench launch -- dtbench {} ...`, which reads these variables as torchrun does",
        command, *plan.nnodes, plan.used, command, command));
}

std::optional<int> self_launch(const RunOptions& o, bool nproc_implicit) {
  const bool launched = std::getenv("DTBENCH_LAUNCHED") != nullptr;
  if (nproc_implicit) {
    refuse_pod_of_larger_job(original_args().size() > 1 ? original_args()[1] : "");
  } else if (const auto plan = pod_plan(!o.nproc_given); !plan.empty()) {
    // A Kubeflow TrainJob's pod: this node's ranks of the job.
    launch::LaunchOptions node;
    node.nproc_per_node = o.nproc;
    const std::string used = launch::apply_node_plan(plan, node, false, false);
    if (!used.empty()) {
      if (node.nnodes > 1 && o.comm.backend == "mpi")
        throw UsageError(fmt::format("--backend mpi across the nodes of a Kubernetes job ({}): mpirun starts "
                                     "MPI ranks (the MPI Operator's MPIJob)",
                                     used));
      node.extra_env.push_back(std::string(launch::kNodePlanEnv) + "=" + used);
      if (node.nnodes > 1 || node.nproc_per_node > 1) {
        std::vector<std::string> args = original_args();
        args[0] = launch::self_executable();
        return launch_workers(node.nproc_per_node, o.comm.backend, o.bind, args, node);
      }
      return std::nullopt;
    }
  }
  if (o.nproc <= 1 && !launched && launch::parse_bind(o.bind) != launch::Bind::none)
    throw UsageError(fmt::format("--bind {} pins ranks that dtbench starts: give --nproc 2 or more",
                                 o.bind));
  if (o.nproc <= 1 || launched) return std::nullopt;
  const auto world = launch::world_from_env(launch::process_env());
  if (world.source != "single" && nproc_implicit) return std::nullopt;
  if (world.source != "single") {
    throw UsageError(fmt::format(
        "--nproc cannot be used under an external launcher ({} already started {} rank(s))",
        world.source, world.world_size));
  }
  std::vector<std::string> args = original_args();
  args[0] = launch::self_executable();
  return launch_workers(o.nproc, o.comm.backend, o.bind, args);
}

int launch_workers(int nproc, const std::string& backend, const std::string& bind,
                   const std::vector<std::string>& args, const launch::LaunchOptions& node) {
  const auto plan = plan_local_binding(bind, nproc);
  if (backend == "mpi") {
    // MPI ranks must come from mpirun: it starts them and aborts the whole
    // job when one fails. Its own default binds ranks to cores (np <= 2) or
    // sockets, and ignores this process's affinity: --bind-to none, so that
    // --bind means the same as with gloo; with --bind core each rank pins
    // itself to its share (apply_cpu_plan_from_env).
    std::vector<std::string> cmd{"mpirun", "-np", std::to_string(nproc), "--oversubscribe",
                                 "--bind-to", "none", "-x", "DTBENCH_LAUNCHED=1"};
    if (!plan.empty()) {
      cmd.insert(cmd.end(), {"-x", std::string(launch::kCpuPlanEnv) + "=" + launch::encode_plan(plan)});
    }
    if (geteuid() == 0) cmd.push_back("--allow-run-as-root");
    cmd.insert(cmd.end(), args.begin(), args.end());
    launch::LaunchOptions lo;
    lo.nproc_per_node = 1;  // one mpirun, which starts the ranks
    lo.rank_env = false;
    return launch::launch(lo, cmd).exit_code;
  }
  launch::LaunchOptions lo = node;
  lo.nproc_per_node = nproc;
  lo.cpu_sets = plan;
  return launch_node(lo, args);
}

int launch_node(launch::LaunchOptions lo, const std::vector<std::string>& args) {
  if (lo.nnodes > 1) {
    // Ranks on other nodes see only a broken connection: tell them, through
    // the job's store, which rank died here and how.
    lo.on_failure = [addr = lo.master_addr, port = lo.master_port, node = lo.node_rank](const std::string& failure) {
      const std::string host = net::host_identity();
      comm::publish_failure(addr, port,
                            fmt::format("{} on node {} ({})", failure, node, host.substr(0, host.find('/'))),
                            std::chrono::milliseconds(2000));
    };
  }
  lo.on_stopped = publish_stopped(lo.node_rank);
  const std::string plan_prefix = std::string(launch::kNodePlanEnv) + "=";
  for (const auto& e : lo.extra_env)
    if (lo.verbose && e.rfind(plan_prefix, 0) == 0)
      fmt::print(stderr, "dtbench launch: from the environment: {}\n", e.substr(plan_prefix.size()));
  // Node 0's launcher hosts the job's store for every node's workers, as
  // torchrun's agent does (comm::host_launcher_store): a dead rank 0 takes
  // neither the store nor the published cause with it, and a port of 0 is
  // bound and kept, never free between its choice and its use. Only for
  // workers that are this very build: another program (a Python script, a
  // dtbench of another LibTorch) may speak another TCPStore protocol, so
  // its rank 0 hosts the store, as before torchrun's agent store.
  launch::validate_options(lo, args);
  comm::LauncherStore store;
  if (!args.empty() && launch::runs_this_executable(args[0])) {
    if (lo.node_rank == 0 && (lo.nnodes == 1 || lo.master_port != 0)) {
      store = comm::host_launcher_store(lo.master_port);
      lo.master_port = store.port;
    }
    lo.agent_store = comm::launcher_store_version();
  }
  const int rc = launch::launch(lo, args).exit_code;
  if (rc != 0 && store.port != 0 && lo.nnodes > 1 && launch::interrupted_by() == 0) {
    // The other nodes' ranks are still asking the store why the job failed
    // (the cause a launcher published, whose heartbeat stopped): it stays up
    // for the grace period more.
    std::this_thread::sleep_for(lo.grace);
  }
  return rc;
}

std::function<void(const std::string&, const std::string&, int)> publish_stopped(int node_rank) {
  return [node_rank](const std::string& line, const std::string& addr, int port) {
    const std::string host = net::host_identity();
    comm::publish_failure(addr, port,
                          fmt::format("{} on node {} ({})", line, node_rank, host.substr(0, host.find('/'))),
                          std::chrono::milliseconds(2000));
  };
}

}  // namespace dtbench::cli
