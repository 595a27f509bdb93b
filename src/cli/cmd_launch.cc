// `dtbench launch`: start one node's workers with a torchrun-style environment,
// or (--ray) N ranks on a running Ray cluster through dtbench's Ray driver.
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/run_options.h"
#include "core/net_route.h"
#include "core/units.h"
#include "launch/binding.h"
#include "launch/launcher.h"
#include "launch/node_plan.h"
#include "launch/ray_launch.h"
#include "launch/world.h"

namespace dtbench::cli {

Action register_launch(CLI::App& app) {
  auto opts = std::make_shared<launch::LaunchOptions>();
  auto command = std::make_shared<std::vector<std::string>>();
  auto grace = std::make_shared<std::string>("3s");
  auto bind = std::make_shared<std::string>("none");
  auto ray = std::make_shared<launch::RayLaunchOptions>();
  auto placement_timeout = std::make_shared<std::string>("60s");
  auto* cmd = app.add_subcommand(
      "launch",
      "Start N local workers of a command with RANK/WORLD_SIZE/MASTER_* set (torchrun-like), "
      "or N ranks on a Ray cluster (--ray)");
  cmd->footer(
      "Usage: dtbench launch --nproc-per-node N [options] -- COMMAND [ARGS...]\n"
      "       dtbench launch --ray [ADDRESS] --nproc N [--gpus-per-rank G] [--placement pack|spread]"
      " -- COMMAND [ARGS...]\n"
      "With --ray, one Ray actor per rank (a placement group of N bundles) runs COMMAND with\n"
      "Ray Train's RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR (rank 0's\n"
      "node), MASTER_PORT and CUDA_VISIBLE_DEVICES; rank 0's output is streamed, the others'\n"
      "stderr prefixed [rank K]. Needs Ray 2.60.0 (bash scripts/ray.sh; DTBENCH_RAY_PYTHON picks\n"
      "the Python).\n"
      "SIGINT, SIGTERM, SIGHUP and SIGQUIT are forwarded to every worker's process group; after\n"
      "--grace the rest is killed and the launcher dies by the same signal.\n"
      "Node 0's launcher hosts the job's store at MASTER_PORT, as torchrun's agent does\n"
      "(TORCHELASTIC_USE_AGENT_STORE=True): it outlives any worker, rank 0 included.\n"
      "Trusted network only: the store listens on every interface without authentication, as\n"
      "PyTorch's (docs/RELIABILITY.md).");
  auto* nproc_per_node =
      cmd->add_option("--nproc-per-node", opts->nproc_per_node, "Workers on this node")
          ->check(CLI::Range(1, 1024))
          ->capture_default_str();
  auto* nnodes = cmd->add_option("--nnodes", opts->nnodes, "Nodes in the job")
                     ->check(CLI::Range(1, 100000))
                     ->capture_default_str();
  auto* node_rank =
      cmd->add_option("--node-rank", opts->node_rank, "This node's index (0 .. nnodes-1)")
          ->check(CLI::Range(0, 100000))
          ->capture_default_str();
  auto* master_addr =
      cmd->add_option("--master-addr", opts->master_addr, "Address of node 0, whose launcher hosts the job's store")
          ->capture_default_str();
  auto* master_port =
      cmd->add_option("--master-port", opts->master_port,
                      "Port of the job's store on node 0 (0 = a free one; required with --nnodes > 1)")
          ->check(CLI::Range(0, 65535))
          ->capture_default_str();
  cmd->add_option("--grace", *grace,
                  "After a worker fails, how long the others get before SIGKILL")
      ->capture_default_str();
  auto* bind_opt = cmd->add_option("--bind", *bind, kBindHelp)->capture_default_str();
  cmd->add_flag("-v,--verbose", opts->verbose, "Print each worker's start and exit");
  auto* ray_opt = cmd->add_option("--ray", ray->address,
                                  "Run on a Ray cluster at ADDRESS (default: RAY_ADDRESS, then "
                                  "auto = the cluster this machine started or joined)")
                      ->expected(0, 1);
  cmd->add_option("--nproc", ray->nproc, "With --ray: ranks in the job")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str()
      ->needs(ray_opt);
  // Their ranges are checked with the others in launch::ray_driver_argv.
  cmd->add_option("--cpus-per-rank", ray->cpus_per_rank, "With --ray: CPUs in each rank's bundle")
      ->capture_default_str()
      ->needs(ray_opt);
  cmd->add_option("--gpus-per-rank", ray->gpus_per_rank,
                  "With --ray: GPUs in each rank's bundle (CUDA_VISIBLE_DEVICES as Ray assigns)")
      ->capture_default_str()
      ->needs(ray_opt);
  cmd->add_option("--placement", ray->placement,
                  "With --ray: pack (fill a node first, Ray Train's default) or spread (one node "
                  "after another)")
      ->check(CLI::IsMember({"pack", "spread"}))
      ->capture_default_str()
      ->needs(ray_opt);
  cmd->add_option("--placement-timeout", *placement_timeout,
                  "With --ray: how long Ray may take to place every rank")
      ->capture_default_str()
      ->needs(ray_opt);
  for (auto* local_only : {nproc_per_node, nnodes, node_rank, master_addr, master_port, bind_opt})
    ray_opt->excludes(local_only);
  cmd->add_option("command", *command, "The command each worker runs (after --)")->required();
  return [opts, command, grace, bind, ray, ray_opt, placement_timeout, nproc_per_node, nnodes, node_rank,
          master_addr, master_port]() {
    opts->grace = parse_duration(*grace, "--grace");
    if (ray_opt->count() > 0) {
      ray->grace = opts->grace;
      ray->verbose = opts->verbose;
      ray->placement_timeout = parse_duration(*placement_timeout, "--placement-timeout");
      launch::exec_ray_driver(*ray, *command);
    }
    // A Kubernetes controller's variables, where no flag says otherwise (as
    // torchrun reads PET_*): Kubeflow Trainer's PET_NNODES, PET_NPROC_PER_NODE,
    // PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT; an indexed Job's or
    // JobSet's JOB_COMPLETION_INDEX as the node rank.
    const auto env = launch::process_env();
    const auto plan = launch::node_plan_from_env([&](const std::string& name) -> std::optional<std::string> {
      const bool flagged = (name == "PET_NNODES" && nnodes->count() > 0) ||
                           (name == "PET_NPROC_PER_NODE" && nproc_per_node->count() > 0) ||
                           ((name == "PET_NODE_RANK" || name == "JOB_COMPLETION_INDEX") && node_rank->count() > 0) ||
                           (name == "PET_MASTER_ADDR" && master_addr->count() > 0) ||
                           (name == "PET_MASTER_PORT" && master_port->count() > 0);
      return flagged ? std::nullopt : env(name);
    });
    const std::string used = launch::apply_node_plan(plan, *opts, node_rank->count() > 0, master_addr->count() > 0);
    if (!used.empty()) opts->extra_env.push_back(std::string(launch::kNodePlanEnv) + "=" + used);
    opts->cpu_sets = plan_local_binding(*bind, opts->nproc_per_node);
    opts->torchrun_threads = true;  // OMP_NUM_THREADS=1 with several workers, unless set (torchrun's)
    launch::validate_options(*opts, *command);
    return launch_node(*opts, *command);
  };
}

}  // namespace dtbench::cli
