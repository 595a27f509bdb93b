// The front end's side of the seam in cli/jobs.h: every job is dtbench-torch's.
// By the time a job is called the command line has parsed and its flags
// passed the checks that need no LibTorch, so a bad flag, --help and the
// commands that need no tensor (diff, report) never load it; the job execs
// dtbench-torch with the same arguments (argv[0] included, so the process
// keeps its pid, its command line and its CPU binding).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/jobs.h"
#include "cli/run_options.h"
#include "core/error.h"
#include "launch/launcher.h"

namespace dtbench::cli {
namespace {

int hand_off() {
  const std::string torch = launch::torch_half_executable();
  const std::string self = launch::running_executable();
  struct stat st {};
  if (stat(torch.c_str(), &st) != 0)
    throw IoError(fmt::format("{} (the half of dtbench that runs LibTorch) is missing beside {}: rebuild "
                              "(make build), or keep the two executables together",
                              launch::kTorchHalfName, self));
  struct stat me {};
  if (stat(self.c_str(), &me) == 0 && me.st_dev == st.st_dev && me.st_ino == st.st_ino)
    throw IoError(fmt::format("{} is this front end itself, not the half that runs LibTorch: rebuild (make build)",
                              torch));
  if (access(torch.c_str(), X_OK) != 0)
    throw IoError(fmt::format("cannot run {} (the half of dtbench that runs LibTorch): {}", torch,
                              std::strerror(errno)));
  const auto& args = original_args();
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  execv(torch.c_str(), argv.data());
  throw IoError(fmt::format("cannot run {}: {}", torch, std::strerror(errno)));
}

}  // namespace

int env_job(const EnvFlags&) { return hand_off(); }
int models_job(const ModelsFlags&) { return hand_off(); }
int comm_job(CommFlags&) { return hand_off(); }
int ddp_job(DdpFlags&) { return hand_off(); }
int compare_job(CompareFlags&) { return hand_off(); }
int kvstore_job(KvFlags&) { return hand_off(); }
int hybrid_job(HybridFlags&) { return hand_off(); }
int project_job(const ProjectFlags&) { return hand_off(); }
int launch_node(launch::LaunchOptions, const std::vector<std::string>&) { return hand_off(); }

void begin_jobs() {}
bool end_jobs() { return true; }  // the front end starts no thread

}  // namespace dtbench::cli
