#include "launch/ray_launch.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "build_config.h"
#include "core/error.h"

namespace dtbench::launch {
namespace {

EnvGet env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::function<bool(const std::string&)> files(std::set<std::string> present) {
  return [present](const std::string& p) { return present.count(p) > 0; };
}

TEST(RayLaunch, AddressFromOptionThenRayAddressThenAuto) {
  RayLaunchOptions o;
  EXPECT_EQ(ray_address(o, env_of({})), "auto");
  EXPECT_EQ(ray_address(o, env_of({{"RAY_ADDRESS", "10.0.0.1:6379"}})), "10.0.0.1:6379");
  EXPECT_EQ(ray_address(o, env_of({{"RAY_ADDRESS", ""}})), "auto");
  o.address = "ray://head:10001";
  EXPECT_EQ(ray_address(o, env_of({{"RAY_ADDRESS", "10.0.0.1:6379"}})), "ray://head:10001");
}

TEST(RayLaunch, PythonIsTheRayCommandsInterpreter) {
  const auto shebang = [](const std::string& path) {
    return path == "/opt/v/bin/ray" ? std::string("#!/opt/v/bin/python3.11 -u") : std::string();
  };
  const auto env = env_of({{"PATH", "/usr/bin:/opt/v/bin"}});
  EXPECT_EQ(ray_python(env, files({"/opt/v/bin/ray", "/opt/v/bin/python3.11"}), shebang),
            "/opt/v/bin/python3.11");
  // DTBENCH_RAY_PYTHON wins.
  EXPECT_EQ(ray_python(env_of({{"PATH", "/opt/v/bin"}, {"DTBENCH_RAY_PYTHON", "/x/python"}}),
                       files({"/opt/v/bin/ray", "/opt/v/bin/python3.11"}), shebang),
            "/x/python");
  // No ray on PATH: the source tree's .deps/ray, then python3.
  const std::string deps = std::string(DTBENCH_SOURCE_DIR) + "/.deps/ray/bin/python";
  EXPECT_EQ(ray_python(env_of({{"PATH", "/usr/bin"}}), files({deps}), shebang), deps);
  EXPECT_EQ(ray_python(env_of({{"PATH", "/usr/bin"}}), files({}), shebang), "python3");
  // A ray script whose interpreter is gone is skipped.
  EXPECT_EQ(ray_python(env, files({"/opt/v/bin/ray"}), shebang), "python3");
}

TEST(RayLaunch, DriverBesideTheExecutableElseTheSourceTree) {
  EXPECT_EQ(ray_driver_path(env_of({}), "/b", files({"/b/ray_driver.py"})), "/b/ray_driver.py");
  const std::string src = std::string(DTBENCH_SOURCE_DIR) + "/src/launch/ray_driver.py";
  EXPECT_EQ(ray_driver_path(env_of({}), "/b", files({src})), src);
  EXPECT_EQ(ray_driver_path(env_of({{"DTBENCH_RAY_DRIVER", "/d.py"}}), "/b", files({})), "/d.py");
  EXPECT_THROW(ray_driver_path(env_of({}), "/b", files({})), IoError);
}

TEST(RayLaunch, DriverArgv) {
  RayLaunchOptions o;
  o.nproc = 4;
  o.gpus_per_rank = 1;
  o.placement = "spread";
  o.grace = std::chrono::milliseconds(1500);
  o.verbose = true;
  const auto argv = ray_driver_argv(o, env_of({{"RAY_ADDRESS", "h:6379"}}), "py", "drv.py",
                                    "/bin/dtbench", {"dtbench", "ddp", "-m", "mlp"});
  const std::vector<std::string> want{
      "py", "drv.py", "--address", "h:6379", "--nproc", "4", "--cpus-per-rank", "1",
      "--gpus-per-rank", "1", "--placement", "spread", "--placement-timeout", "60", "--grace",
      "1.5", "--dtbench", "/bin/dtbench", "--verbose", "--", "dtbench", "ddp", "-m", "mlp"};
  EXPECT_EQ(argv, want);
}

TEST(RayLaunch, BadOptionsAreRefused) {
  const auto env = env_of({});
  RayLaunchOptions o;
  EXPECT_THROW(ray_driver_argv(o, env, "py", "d", "x", {}), UsageError);
  o.placement = "strict";
  EXPECT_THROW(ray_driver_argv(o, env, "py", "d", "x", {"true"}), UsageError);
  o.placement = "pack";
  o.cpus_per_rank = 0;
  EXPECT_THROW(ray_driver_argv(o, env, "py", "d", "x", {"true"}), UsageError);
  o.cpus_per_rank = 1;
  o.nproc = 0;
  EXPECT_THROW(ray_driver_argv(o, env, "py", "d", "x", {"true"}), UsageError);
}

}  // namespace
}  // namespace dtbench::launch
