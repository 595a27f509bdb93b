// `dtbench env`: versions, backends, BLAS, CPU/NUMA/caches, GPUs.
#include <iostream>

#include <CLI/CLI.hpp>

#include "bench/env_info.h"
#include "cli/commands.h"
#include "report/env_reporter.h"
#include "report/json_io.h"

namespace dtbench::cli {

Action register_env(CLI::App& app) {
  auto* cmd = app.add_subcommand("env", "Print versions, backends, BLAS and CPU/GPU topology");
  auto json_path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  cmd->add_flag("--as-json", *as_json, "Print the environment as JSON instead of '# key: value'");
  cmd->add_option("--json", *json_path, "Also write the environment as JSON to this file");
  return [json_path, as_json]() {
    if (!json_path->empty()) report::require_writable_path(*json_path, "--json");
    const auto env = bench::collect_env();
    if (*as_json) {
      std::cout << env.dump(2) << "\n";
    } else {
      report::print_env(std::cout, env);
    }
    if (!json_path->empty()) report::write_json_atomic(*json_path, env);
    return 0;
  };
}

}  // namespace dtbench::cli
