// dtbench: distributed deep-learning training benchmarks.
// main() parses the command line, runs one subcommand and maps errors to exit
// codes: 0 success, 1 runtime failure, 2 usage error, 3 wrong results. Both
// executables run it: the front end (dtbench) and dtbench-torch, to which the
// front end hands the commands that need LibTorch (cli/jobs.h).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "build_config.h"
#include "cli/commands.h"
#include "cli/run_options.h"
#include "cli/jobs.h"
#include "core/allocator.h"
#include "core/error.h"
#include "launch/launcher.h"
#include "core/log.h"

namespace dtbench::cli {
namespace {

std::vector<std::string> g_args;

}  // namespace

const std::vector<std::string>& original_args() { return g_args; }
void set_original_args(int argc, char** argv) { g_args.assign(argv, argv + argc); }

}  // namespace dtbench::cli

namespace {

int fail(int code, const std::string& msg) {
  dtbench::log::error(msg);
  return code;
}

// The exit status, after what a job left running has stopped (cli/jobs.h:
// the heartbeat thread must not be inside a store request while static
// destructors run). If it does not stop in time, the process ends without
// them (output flushed).
int finish(int code) {
  // Ended by a signal the launcher forwarded to its workers: die by it, so
  // the caller (a shell loop, a scheduler) sees the signal, not a status.
  if (const int sig = dtbench::launch::interrupted_by(); sig != 0) {
    dtbench::cli::end_jobs();
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  if (!dtbench::cli::end_jobs()) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dtbench;
  // A peer that died leaves its sockets closed: a write to one must fail with
  // EPIPE, which Gloo, the TCPStore and TensorPipe turn into an error naming
  // the peer, instead of killing this rank by SIGPIPE before it can say why
  // (Python, hence PyTorch, ignores SIGPIPE at start-up for this reason).
  // Workers the launcher execs get the default back (launch/launcher.cc).
  std::signal(SIGPIPE, SIG_IGN);
  cli::begin_jobs();
  // Before anything large is allocated: fixed malloc thresholds (core/allocator.h).
  try {
    alloc::configure_from_env();
    cli::apply_cpu_plan_from_env();  // a rank mpirun started with --bind core
  } catch (const std::exception& e) {
    return fail(2, e.what());
  }
  cli::set_original_args(argc, argv);
  CLI::App app{"dtbench: benchmarks for distributed deep-learning training", "dtbench"};
  app.set_version_flag("--version", std::string("dtbench ") + DTBENCH_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Run 'dtbench COMMAND --help' for a command's options. Exit status: 0 ok, 1 runtime "
      "failure, 2 usage error, 3 wrong results; killed by the signal that interrupted it.\n"
      "Multi-rank jobs need a trusted network: their store accepts any client that reaches it.");
  std::map<std::string, cli::Action> actions;
  actions["env"] = cli::register_env(app);
  actions["comm"] = cli::register_comm(app);
  actions["launch"] = cli::register_launch(app);
  actions["models"] = cli::register_models(app);
  actions["train"] = cli::register_ddp(app);  // alias ddp
  actions["compare"] = cli::register_compare(app);
  actions["diff"] = cli::register_diff(app);
  actions["project"] = cli::register_project(app);
  actions["report"] = cli::register_report(app);
  actions["kvstore"] = cli::register_kvstore(app);
  actions["hybrid"] = cli::register_hybrid(app);
  actions["trace"] = cli::register_trace(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    if (msg.empty()) msg = "invalid command line";
    // A first word that is no command (a typo): name it and the commands,
    // rather than CLI11's "A subcommand is required".
    auto is_command = [&app](const std::string& word) {  // a name or an alias (train's ddp)
      try {
        app.get_subcommand(word);
        return true;
      } catch (const CLI::OptionNotFound&) {
        return false;
      }
    };
    if (argc > 1 && argv[1][0] != '-' && !is_command(argv[1])) {
      std::string names;
      for (const auto& [name, action] : actions)
        names += (names.empty() ? "" : ", ") + name + (name == "train" ? " (ddp)" : "");
      msg = fmt::format("unknown command '{}' (commands: {})", argv[1], names);
    } else if (argc == 1) {
      msg = "no command given";
    }
    return fail(2, msg + " (see 'dtbench --help')");
  }

  try {
    for (auto* sub : app.get_subcommands()) return finish(actions.at(sub->get_name())());
    return fail(2, "no command given (see 'dtbench --help')");
  } catch (const UsageError& e) {
    return finish(fail(2, e.what()));
  } catch (const VerificationError& e) {
    return finish(fail(3, std::string("wrong results: ") + e.what()));
  } catch (const std::exception& e) {
    return finish(fail(1, e.what()));
  }
}
