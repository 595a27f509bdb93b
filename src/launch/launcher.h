#pragma once
// Local multi-process launcher (torchrun-like). Starts one node's workers with
// the torchrun-style environment (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) and supervises them:
//  - a worker that exits non-zero or is killed ends the job: the others get
//    SIGTERM, then SIGKILL after `grace`; the failure is named on stderr;
//  - SIGINT/SIGTERM to the launcher are forwarded to every worker;
//  - workers die with the launcher (PR_SET_PDEATHSIG) and each runs in its own
//    process group, which is killed whole, so nothing is left behind.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace dtbench::launch {

struct LaunchOptions {
  // Workers started on this node. Default 1.
  int nproc_per_node = 1;
  // Nodes in the job; each runs one launcher. Default 1.
  int nnodes = 1;
  // This node's index, 0 .. nnodes-1. Default 0.
  int node_rank = 0;
  // Address of the node that hosts rank 0's store. Default loopback.
  std::string master_addr = "127.0.0.1";
  // Store port; 0 picks a free one outside the ephemeral range
  // (net::free_tcp_port; single-node jobs only). Default 0.
  int master_port = 0;
  // Non-empty when the caller hosts the job's store at master_port for the
  // workers, as torchrun's agent does (comm::host_launcher_store): they get
  // TORCHELASTIC_USE_AGENT_STORE=True and DTBENCH_AGENT_STORE=<this>, and
  // join it as clients; rank 0 hosts nothing. Empty: "False", rank 0 hosts.
  std::string agent_store;
  // After a failure or a forwarded signal, how long workers get to exit before
  // SIGKILL. Default 3 s.
  std::chrono::milliseconds grace{3000};
  // Extra NAME=VALUE pairs for every worker.
  std::vector<std::string> extra_env;
  // Give workers the torchrun-style rank variables. Default true; false when
  // the command is itself a launcher (mpirun), whose ranks must not inherit
  // RANK=0/WORLD_SIZE=1.
  bool rank_env = true;
  // Also torchrun's OMP_NUM_THREADS=1 when more than one worker runs here
  // and the variable is unset (`dtbench launch`; dtbench's own self-launch
  // sizes its ranks' threads itself). Default false.
  bool torchrun_threads = false;
  // TORCHELASTIC_RUN_ID given to the workers (torchrun's --rdzv-id; its
  // default is "none").
  std::string run_id = "none";
  // CPUs for each local worker (launch/binding.h plan_binding), applied
  // before it execs, so all its threads inherit them; empty = not bound.
  std::vector<std::vector<int>> cpu_sets;
  // Print one line per worker start/exit on stderr. Default false.
  bool verbose = false;
  // Called once with the failure line ("rank 3 (pid 812) was killed by
  // signal 9 (Killed)") when a worker fails, before the others are stopped:
  // how other nodes learn which rank died. Must return within a bound.
  std::function<void(const std::string&)> on_failure;
  // Called once per worker the kernel reports stopped (SIGSTOP, SIGTSTP, a
  // debugger), with its line ("rank 2 (pid 812) is stopped by signal 19
  // (Stopped (signal))") and the job's store address (master_port resolved):
  // a stopped rank never exits, so this is how the ranks waiting on it can
  // name it when their collectives time out. Must return within a bound.
  std::function<void(const std::string& line, const std::string& master_addr, int master_port)>
      on_stopped;
};

// How one worker ended.
struct WorkerExit {
  int rank = 0;
  int pid = 0;
  int exit_code = 0;  // valid when signal == 0
  int signal = 0;     // the signal that killed it, 0 if it exited
  bool terminated_by_launcher = false;
};

struct LaunchResult {
  // 0 when every worker exited 0; otherwise the first failed worker's code
  // (128 + signal for a killed one), or 128 + the signal after SIGINT,
  // SIGTERM, SIGHUP or SIGQUIT (forwarded to the workers first).
  int exit_code = 0;
  std::vector<WorkerExit> workers;
  std::string failure;  // one line naming the failed rank, "" on success
};

// Throws UsageError on invalid options (what launch() checks first).
void validate_options(const LaunchOptions& opts, const std::vector<std::string>& argv);

// Runs `argv` once per local worker and waits for all of them. Throws
// UsageError on invalid options, IoError when a worker cannot be started.
LaunchResult launch(const LaunchOptions& opts, const std::vector<std::string>& argv);

// The signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) that ended a launch() of
// this process, after it was forwarded to every worker; 0 if none. The
// program re-raises it at exit (a shell loop around it then stops too).
int interrupted_by();

// dtbench is two executables of one build, side by side: `dtbench`, the
// front end (no LibTorch: it parses and checks every command line, prints
// help and runs what needs no tensor), and `dtbench-torch`, which runs the
// commands that need LibTorch (cli/hand_off.cc execs it with the same
// arguments). Their file names:
inline constexpr const char* kFrontEndName = "dtbench";
inline constexpr const char* kTorchHalfName = "dtbench-torch";

// Absolute path of the dtbench that runs: the front end's, also from within
// dtbench-torch (workers, ranks and Ray actors are started through it, so
// their command lines read `dtbench ...`).
std::string self_executable();

// Absolute path of dtbench-torch beside the running executable (whether or
// not it is there).
std::string torch_half_executable();

// Absolute path of the running executable itself (/proc/self/exe).
std::string running_executable();

// Whether `command` (a path, or a name looked up in PATH as execvp does)
// is this very build's dtbench (its front end, or dtbench-torch): its
// workers are dtbench ranks of this build.
bool runs_this_executable(const std::string& command);

}  // namespace dtbench::launch
