// `dtbench launch`: start one node's workers with a torchrun-style environment.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/run_options.h"
#include "comm/store.h"
#include "core/net_route.h"
#include "core/units.h"
#include "launch/binding.h"
#include "launch/launcher.h"

namespace dtbench::cli {

Action register_launch(CLI::App& app) {
  auto opts = std::make_shared<launch::LaunchOptions>();
  auto command = std::make_shared<std::vector<std::string>>();
  auto grace = std::make_shared<std::string>("3s");
  auto bind = std::make_shared<std::string>("none");
  auto* cmd = app.add_subcommand(
      "launch",
      "Start N local workers of a command with RANK/WORLD_SIZE/MASTER_* set (torchrun-like)");
  cmd->footer("Usage: dtbench launch --nproc-per-node N [options] -- COMMAND [ARGS...]");
  cmd->add_option("--nproc-per-node", opts->nproc_per_node, "Workers on this node")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--nnodes", opts->nnodes, "Nodes in the job")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--node-rank", opts->node_rank, "This node's index (0 .. nnodes-1)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--master-addr", opts->master_addr, "Address of rank 0's node")
      ->capture_default_str();
  cmd->add_option("--master-port", opts->master_port,
                  "Port of rank 0's store (0 = a free port; required with --nnodes > 1)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--grace", *grace,
                  "After a worker fails, how long the others get before SIGKILL")
      ->capture_default_str();
  cmd->add_option("--bind", *bind, kBindHelp)->capture_default_str();
  cmd->add_flag("-v,--verbose", opts->verbose, "Print each worker's start and exit");
  cmd->add_option("command", *command, "The command each worker runs (after --)")->required();
  return [opts, command, grace, bind]() {
    opts->grace = parse_duration(*grace, "--grace");
    opts->cpu_sets = plan_local_binding(*bind, opts->nproc_per_node);
    if (opts->nnodes > 1) {
      // Ranks on other nodes see only a broken connection: tell them, through
      // the job's store, which rank died here and how.
      opts->on_failure = [o = *opts](const std::string& failure) {
        const std::string host = net::host_identity();
        comm::publish_failure(o.master_addr, o.master_port,
                              fmt::format("{} on node {} ({})", failure, o.node_rank,
                                          host.substr(0, host.find('/'))),
                              std::chrono::milliseconds(2000));
      };
    }
    opts->on_stopped = publish_stopped(opts->node_rank);
    return launch::launch(*opts, *command).exit_code;
  };
}

}  // namespace dtbench::cli
