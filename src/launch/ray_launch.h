#pragma once
// `dtbench launch --ray`: runs a command as N ranks on a running Ray cluster
// through dtbench's Ray driver (src/launch/ray_driver.py, a Python module:
// Ray's API is Python). This side picks the interpreter and the driver,
// builds the driver's command line and execs it; the driver places the
// ranks, gives them Ray Train's environment and supervises them.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dtbench::launch {

struct RayLaunchOptions {
  // Cluster address as ray.init takes it ("auto", "HOST:PORT", "ray://...").
  // Empty: RAY_ADDRESS, then "auto".
  std::string address;
  // Ranks (placement-group bundles, one actor each). Default 1.
  int nproc = 1;
  // Resources of each bundle. Defaults: 1 CPU, no GPU.
  double cpus_per_rank = 1.0;
  double gpus_per_rank = 0.0;
  // "pack" (Ray's PACK: fill a node first; Ray Train's default) or "spread".
  std::string placement = "pack";
  // How long Ray may take to place every bundle before the launch fails.
  std::chrono::milliseconds placement_timeout{60000};
  // After a rank fails, how long the others get before SIGKILL.
  std::chrono::milliseconds grace{3000};
  bool verbose = false;
};

using EnvGet = std::function<std::optional<std::string>(const std::string&)>;

// The address the driver connects to: the option, else RAY_ADDRESS, else "auto".
std::string ray_address(const RayLaunchOptions& o, const EnvGet& env);

// The Python that runs the driver: DTBENCH_RAY_PYTHON; else the interpreter
// of the `ray` command on PATH (its #! line); else the source tree's
// .deps/ray (scripts/ray.sh); else python3. `exists` tells whether a path is
// an executable file; `read_first_line` reads a file's first line ("" if none).
std::string ray_python(const EnvGet& env, const std::function<bool(const std::string&)>& exists,
                       const std::function<std::string(const std::string&)>& read_first_line);

// The driver module: DTBENCH_RAY_DRIVER; else ray_driver.py beside the
// executable (the build copies it there); else the source tree's.
std::string ray_driver_path(const EnvGet& env, const std::string& exe_dir,
                            const std::function<bool(const std::string&)>& exists);

// The driver's argv (python, module, options, "--", command). Throws
// UsageError on invalid options.
std::vector<std::string> ray_driver_argv(const RayLaunchOptions& o, const EnvGet& env,
                                         const std::string& python, const std::string& driver,
                                         const std::string& dtbench,
                                         const std::vector<std::string>& command);

// Replaces this process with the driver (never returns); throws IoError when
// it cannot be started.
[[noreturn]] void exec_ray_driver(const RayLaunchOptions& o, const std::vector<std::string>& command);

}  // namespace dtbench::launch
