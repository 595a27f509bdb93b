#pragma once
// Each subcommand registers its flags on the CLI11 app and returns the action
// to run once parsing succeeded. One file per subcommand.
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dtbench::cli {

// Runs a parsed subcommand; returns the process exit status.
using Action = std::function<int()>;

Action register_env(CLI::App& app);
Action register_comm(CLI::App& app);
Action register_launch(CLI::App& app);
Action register_models(CLI::App& app);
Action register_ddp(CLI::App& app);
Action register_diff(CLI::App& app);
Action register_compare(CLI::App& app);
Action register_report(CLI::App& app);
Action register_kvstore(CLI::App& app);
Action register_hybrid(CLI::App& app);
Action register_project(CLI::App& app);
Action register_trace(CLI::App& app);

// The command line as given to main (for self-launching workers).
const std::vector<std::string>& original_args();
void set_original_args(int argc, char** argv);

}  // namespace dtbench::cli
