// `dtbench env`: versions, backends, BLAS, CPU/NUMA/caches, GPUs.
// The command's flags; its run is env_job (cli/jobs/env.cc).
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/jobs.h"
#include "core/error.h"
#include "report/json_io.h"

namespace dtbench::cli {

Action register_env(CLI::App& app) {
  auto* cmd = app.add_subcommand("env", "Print versions, backends, BLAS and CPU/GPU topology");
  auto f = std::make_shared<EnvFlags>();
  cmd->add_flag("--as-json", f->as_json, "Print the environment as JSON instead of '# key: value'");
  cmd->add_option("--json", f->json_path, "Also write the environment as JSON to this file");
  cmd->add_option("--threads", f->threads,
                  "Intra-op threads for --probe (give a run's threads per rank; 0 = LibTorch's default)")
      ->check(CLI::Range(0, 1024));
  cmd->add_flag("--probe", f->probe,
                "Also measure the CPU's float32 matmul TFLOP/s with the intra-op threads in use "
                "(a peak for ddp/compare --peak-tflops)");
  cmd->add_option("--device", f->device,
                  "Where --probe measures: cpu, or cuda (GPU 0: float32, bfloat16 and float16 matmul)")
      ->capture_default_str();
  return [f]() {
    if (f->threads > 0 && !f->probe) throw UsageError("--threads applies to --probe only");
    if (f->device != "cpu" && !f->probe) throw UsageError("--device applies to --probe only");
    if (!f->json_path.empty()) report::require_writable_path(f->json_path, "--json");
    return env_job(*f);
  };
}

}  // namespace dtbench::cli
