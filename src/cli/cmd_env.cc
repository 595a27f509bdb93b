// `dtbench env`: versions, backends, BLAS, CPU/NUMA/caches, GPUs.
#include <iostream>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>

#include "bench/env_info.h"
#include "cli/commands.h"
#include "core/blas_threads.h"
#include "core/error.h"
#include "device/device.h"
#include "report/env_reporter.h"
#include "report/json_io.h"

namespace dtbench::cli {

Action register_env(CLI::App& app) {
  auto* cmd = app.add_subcommand("env", "Print versions, backends, BLAS and CPU/GPU topology");
  auto json_path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  cmd->add_flag("--as-json", *as_json, "Print the environment as JSON instead of '# key: value'");
  cmd->add_option("--json", *json_path, "Also write the environment as JSON to this file");
  auto probe = std::make_shared<bool>(false);
  auto threads = std::make_shared<int>(0);
  cmd->add_option("--threads", *threads,
                  "Intra-op threads for --probe (give a run's threads per rank; 0 = LibTorch's default)")
      ->check(CLI::Range(0, 1024));
  cmd->add_flag("--probe", *probe,
                "Also measure the CPU's float32 matmul TFLOP/s with the intra-op threads in use "
                "(a peak for ddp/compare --peak-tflops)");
  auto where = std::make_shared<std::string>("cpu");
  cmd->add_option("--device", *where,
                  "Where --probe measures: cpu, or cuda (GPU 0: float32, bfloat16 and float16 matmul)")
      ->capture_default_str();
  return [json_path, as_json, probe, threads, where]() {
    if (*threads > 0 && !*probe) throw UsageError("--threads applies to --probe only");
    if (*where != "cpu" && !*probe) throw UsageError("--device applies to --probe only");
    device::check_available(*where, 1);
    if (!json_path->empty()) report::require_writable_path(*json_path, "--json");
    if (*threads > 0) {
      at::set_num_threads(*threads);
      set_blas_threads(*threads);
    }
    auto env = bench::collect_env();
    if (*probe) env["probe"] = *where == "cuda" ? bench::probe_matmul_gpu() : bench::probe_matmul();
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
