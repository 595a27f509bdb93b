#include "launch/ray_launch.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "build_config.h"
#include "core/error.h"
#include "launch/launcher.h"
#include "launch/world.h"

namespace dtbench::launch {
namespace {

std::string seconds_text(std::chrono::milliseconds d) {
  return fmt::format("{:g}", static_cast<double>(d.count()) / 1000.0);
}

bool is_executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }
bool is_readable(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

std::optional<std::string> on_path(const std::string& name, const EnvGet& env,
                                   const std::function<bool(const std::string&)>& exists) {
  const std::string path = env("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    const std::string dir = path.substr(start, end - start);
    if (!dir.empty() && exists(dir + "/" + name)) return dir + "/" + name;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::string ray_address(const RayLaunchOptions& o, const EnvGet& env) {
  if (!o.address.empty()) return o.address;
  if (const auto a = env("RAY_ADDRESS"); a && !a->empty()) return *a;
  return "auto";
}

std::string ray_python(const EnvGet& env, const std::function<bool(const std::string&)>& exists,
                       const std::function<std::string(const std::string&)>& read_first_line) {
  if (const auto p = env("DTBENCH_RAY_PYTHON"); p && !p->empty()) return *p;
  if (const auto ray = on_path("ray", env, exists)) {
    const std::string line = read_first_line(*ray);
    if (line.rfind("#!", 0) == 0) {
      std::string interp = line.substr(2);
      interp.erase(0, interp.find_first_not_of(" \t"));
      interp = interp.substr(0, interp.find_first_of(" \t"));
      if (!interp.empty() && exists(interp)) return interp;
    }
  }
  const std::string deps = std::string(DTBENCH_SOURCE_DIR) + "/.deps/ray/bin/python";
  if (exists(deps)) return deps;
  return "python3";
}

std::string ray_driver_path(const EnvGet& env, const std::string& exe_dir,
                            const std::function<bool(const std::string&)>& exists) {
  if (const auto p = env("DTBENCH_RAY_DRIVER"); p && !p->empty()) return *p;
  for (const std::string& candidate :
       {exe_dir + "/ray_driver.py", std::string(DTBENCH_SOURCE_DIR) + "/src/launch/ray_driver.py"}) {
    if (exists(candidate)) return candidate;
  }
  throw IoError(fmt::format("cannot find dtbench's Ray driver (ray_driver.py) beside {} or in {}: "
                            "set DTBENCH_RAY_DRIVER",
                            exe_dir, DTBENCH_SOURCE_DIR));
}

std::vector<std::string> ray_driver_argv(const RayLaunchOptions& o, const EnvGet& env,
                                         const std::string& python, const std::string& driver,
                                         const std::string& dtbench,
                                         const std::vector<std::string>& command) {
  if (command.empty()) throw UsageError("launch --ray: no command to run (after --)");
  if (o.nproc < 1) throw UsageError(fmt::format("--nproc {}: needs 1 or more", o.nproc));
  if (!(o.cpus_per_rank > 0))
    throw UsageError(fmt::format("--cpus-per-rank {:g}: needs more than 0", o.cpus_per_rank));
  if (o.gpus_per_rank < 0)
    throw UsageError(fmt::format("--gpus-per-rank {:g}: needs 0 or more", o.gpus_per_rank));
  if (o.placement != "pack" && o.placement != "spread")
    throw UsageError(fmt::format("--placement {}: use pack or spread", o.placement));
  std::vector<std::string> argv{python,
                                driver,
                                "--address",
                                ray_address(o, env),
                                "--nproc",
                                std::to_string(o.nproc),
                                "--cpus-per-rank",
                                fmt::format("{:g}", o.cpus_per_rank),
                                "--gpus-per-rank",
                                fmt::format("{:g}", o.gpus_per_rank),
                                "--placement",
                                o.placement,
                                "--placement-timeout",
                                seconds_text(o.placement_timeout),
                                "--grace",
                                seconds_text(o.grace),
                                "--dtbench",
                                dtbench};
  if (o.verbose) argv.push_back("--verbose");
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

void exec_ray_driver(const RayLaunchOptions& o, const std::vector<std::string>& command) {
  const EnvGet env = process_env();
  const std::string self = self_executable();
  const std::string exe_dir = self.substr(0, self.rfind('/'));
  const std::string python = ray_python(env, is_executable, first_line);
  const std::string driver = ray_driver_path(env, exe_dir, is_readable);
  const auto argv = ray_driver_argv(o, env, python, driver, self, command);
  std::vector<char*> c;
  for (const auto& a : argv) c.push_back(const_cast<char*>(a.c_str()));
  c.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  execvp(c[0], c.data());
  throw IoError(fmt::format("launch --ray: cannot run {}: {} (install Ray with bash scripts/ray.sh "
                            "or set DTBENCH_RAY_PYTHON)",
                            python, std::strerror(errno)));
}

}  // namespace dtbench::launch
