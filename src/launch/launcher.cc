#include "launch/launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/net_route.h"
#include "launch/binding.h"

namespace dtbench::launch {
namespace {

std::atomic<int> g_forward_signal{0};
std::atomic<int> g_interrupted_by{0};  // the last signal a launch() was ended by

// The signals torchrun's agent traps and forwards: each ends the job with
// the grace period instead of killing the launcher outright (its workers
// would then die by PDEATHSIG's SIGKILL, their own children left behind).
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void on_signal(int sig) { g_forward_signal = sig; }

// Which of kForwarded this launch() traps: all but a SIGHUP the launcher
// inherited as ignored (`nohup dtbench ...` keeps running after a hangup,
// and so do its workers, which inherit SIG_IGN across exec). SIGINT and
// SIGQUIT ignored by inheritance are trapped all the same, as torchrun does:
// a shell script starts its background jobs with both ignored, and `kill
// -INT` must still end them.
bool g_trapped[std::size(kForwarded)] = {};

// Rank and world variables of other launchers (Open MPI, PMI/PMIx, Slurm,
// MVAPICH): a worker that inherited them could read another job's world.
constexpr const char* kForeignWorld[] = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "OMPI_COMM_WORLD_NODE_RANK", "PMI_RANK", "PMI_SIZE", "PMI_LOCAL_RANK", "PMI_LOCAL_SIZE", "PMIX_RANK",
    "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_STEP_NUM_TASKS",
    "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"};

struct Worker {
  WorkerExit exit;
  bool running = true;
  bool stop_reported = false;  // on_stopped called for it
};

void signal_all(std::vector<Worker>& workers, int sig) {
  for (auto& w : workers) {
    if (w.running) kill(-w.exit.pid, sig);  // the worker's whole process group
  }
}

std::string describe(const WorkerExit& e) {
  if (e.signal != 0)
    return fmt::format("rank {} (pid {}) was killed by signal {} ({})", e.rank, e.pid, e.signal,
                       strsignal(e.signal));
  return fmt::format("rank {} (pid {}) exited with status {}", e.rank, e.pid, e.exit_code);
}

[[noreturn]] void exec_worker(const LaunchOptions& opts, const std::vector<std::string>& argv,
                              int local_rank, pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the launcher died before prctl
  for (std::size_t i = 0; i < std::size(kForwarded); ++i)
    if (g_trapped[i]) signal(kForwarded[i], SIG_DFL);
  signal(SIGPIPE, SIG_DFL);  // dtbench ignores it (cli/main.cc); a command gets the usual default
  const int world = opts.nproc_per_node * opts.nnodes;
  const int rank = opts.node_rank * opts.nproc_per_node + local_rank;
  if (opts.rank_env) {
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(local_rank).c_str(), 1);
    setenv("LOCAL_WORLD_SIZE", std::to_string(opts.nproc_per_node).c_str(), 1);
    setenv("GROUP_RANK", std::to_string(opts.node_rank).c_str(), 1);
    // The rest of what torchrun's agent gives a worker (one role, no
    // restarts, the store not the agent's).
    setenv("ROLE_RANK", std::to_string(rank).c_str(), 1);
    setenv("ROLE_NAME", "default", 1);
    setenv("ROLE_WORLD_SIZE", std::to_string(world).c_str(), 1);
    setenv("GROUP_WORLD_SIZE", std::to_string(opts.nnodes).c_str(), 1);
    setenv("TORCHELASTIC_RUN_ID", opts.run_id.c_str(), 1);
    setenv("TORCHELASTIC_RESTART_COUNT", "0", 1);
    setenv("TORCHELASTIC_MAX_RESTARTS", "0", 1);
    if (opts.agent_store.empty()) {
      setenv("TORCHELASTIC_USE_AGENT_STORE", "False", 1);
      unsetenv("DTBENCH_AGENT_STORE");
    } else {
      setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
      setenv("DTBENCH_AGENT_STORE", opts.agent_store.c_str(), 1);
    }
    if (opts.torchrun_threads && opts.nproc_per_node > 1) setenv("OMP_NUM_THREADS", "1", 0);
    // Other launchers' variables would describe a different job.
    for (const char* v : kForeignWorld) unsetenv(v);
  }
  setenv("MASTER_ADDR", opts.master_addr.c_str(), 1);
  setenv("MASTER_PORT", std::to_string(opts.master_port).c_str(), 1);
  setenv("DTBENCH_LAUNCHED", "1", 1);
  for (const auto& kv : opts.extra_env) {
    const auto eq = kv.find('=');
    if (eq != std::string::npos) setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
  }
  if (!opts.cpu_sets.empty()) {
    try {
      bind_this_thread(opts.cpu_sets[static_cast<std::size_t>(local_rank)]);
    } catch (const std::exception& e) {
      fmt::print(stderr, "dtbench launch: rank {}: {}\n", rank, e.what());
      _exit(127);
    }
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  fmt::print(stderr, "dtbench launch: cannot execute '{}': {}\n", argv[0], std::strerror(errno));
  _exit(127);
}

}  // namespace

void validate_options(const LaunchOptions& opts, const std::vector<std::string>& argv) {
  if (argv.empty()) throw UsageError("launch: no command given (use: dtbench launch [opts] -- CMD)");
  if (opts.nproc_per_node < 1 || opts.nproc_per_node > 1024)
    throw UsageError(fmt::format("launch: --nproc-per-node {} is out of range 1..1024",
                                 opts.nproc_per_node));
  if (opts.nnodes < 1) throw UsageError("launch: --nnodes must be at least 1");
  if (opts.node_rank < 0 || opts.node_rank >= opts.nnodes)
    throw UsageError(fmt::format("launch: --node-rank {} is not in 0..{}", opts.node_rank,
                                 opts.nnodes - 1));
  if (opts.master_port < 0 || opts.master_port > 65535)
    throw UsageError(fmt::format("launch: --master-port {} is out of range", opts.master_port));
  if (!opts.agent_store.empty() && !opts.rank_env)
    throw UsageError("launch: a launcher-hosted store needs the rank variables (rank_env)");
  if (opts.master_port == 0 && opts.nnodes > 1)
    throw UsageError("launch: --master-port is required with --nnodes > 1");
  if (!opts.cpu_sets.empty() && static_cast<int>(opts.cpu_sets.size()) != opts.nproc_per_node)
    throw UsageError(fmt::format("launch: {} CPU sets for {} workers", opts.cpu_sets.size(),
                                 opts.nproc_per_node));
}


int interrupted_by() { return g_interrupted_by.load(); }

std::string running_executable() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw IoError("cannot resolve /proc/self/exe");
  return std::string(buf, static_cast<std::size_t>(n));
}

namespace {

// `name` in the folder of `path`.
std::string beside(const std::string& path, const std::string& name) {
  return path.substr(0, path.rfind('/') + 1) + name;
}

}  // namespace

std::string self_executable() {
  const std::string exe = running_executable();
  if (exe.substr(exe.rfind('/') + 1) == kTorchHalfName) {
    const std::string front = beside(exe, kFrontEndName);
    if (access(front.c_str(), X_OK) == 0) return front;
  }
  return exe;
}

std::string torch_half_executable() { return beside(running_executable(), kTorchHalfName); }

bool runs_this_executable(const std::string& command) {
  if (command.empty()) return false;
  auto resolved = [](const std::string& path) -> std::string {
    char buf[PATH_MAX];
    if (access(path.c_str(), X_OK) != 0 || realpath(path.c_str(), buf) == nullptr) return "";
    return buf;
  };
  std::string found;
  if (command.find('/') != std::string::npos) {
    found = resolved(command);
  } else if (const char* path = std::getenv("PATH")) {
    const std::string dirs = path;
    std::size_t pos = 0;
    while (found.empty() && pos <= dirs.size()) {
      std::size_t end = dirs.find(':', pos);
      if (end == std::string::npos) end = dirs.size();
      const std::string dir = end > pos ? dirs.substr(pos, end - pos) : ".";
      found = resolved(dir + "/" + command);
      pos = end + 1;
    }
  }
  return !found.empty() && (found == resolved(self_executable()) || found == resolved(running_executable()));
}

LaunchResult launch(const LaunchOptions& options, const std::vector<std::string>& argv) {
  validate_options(options, argv);
  LaunchOptions opts = options;
  if (opts.master_port == 0) opts.master_port = net::free_tcp_port();

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old[std::size(kForwarded)] = {};
  g_forward_signal = 0;  // before the handlers: a signal from now on is kept
  for (std::size_t i = 0; i < std::size(kForwarded); ++i) {
    sigaction(kForwarded[i], nullptr, &old[i]);
    g_trapped[i] = !(kForwarded[i] == SIGHUP && old[i].sa_handler == SIG_IGN);
    if (g_trapped[i]) sigaction(kForwarded[i], &sa, nullptr);
  }

  std::vector<Worker> workers(static_cast<std::size_t>(opts.nproc_per_node));
  const pid_t self = getpid();
  for (int i = 0; i < opts.nproc_per_node; ++i) {
    const pid_t pid = fork();
    if (pid < 0) {
      signal_all(workers, SIGKILL);
      throw IoError(fmt::format("launch: fork failed: {}", std::strerror(errno)));
    }
    if (pid == 0) exec_worker(opts, argv, i, self);
    setpgid(pid, pid);  // also done in the child; whichever runs first wins
    workers[i].exit.rank = opts.node_rank * opts.nproc_per_node + i;
    workers[i].exit.pid = pid;
    if (opts.verbose)
      fmt::print(stderr, "dtbench launch: started rank {} (pid {}){}\n", workers[i].exit.rank, pid,
                 opts.cpu_sets.empty() ? "" : " on CPUs " + describe_cpus(opts.cpu_sets[i]));
  }

  LaunchResult result;
  int forwarded = 0;
  std::chrono::steady_clock::time_point kill_deadline{};
  bool stopping = false;
  std::size_t running = workers.size();
  while (running > 0) {
    if (const int sig = g_forward_signal.exchange(0); sig != 0) {
      forwarded = sig;
      signal_all(workers, sig);
      if (!stopping) {
        stopping = true;
        kill_deadline = std::chrono::steady_clock::now() + opts.grace;
      }
    }
    // Peek first (WNOWAIT): an exited worker stays a zombie, so its pid and
    // process group id cannot be reused, while its group is killed (any
    // children it left); only then is it reaped. Killing -pid after the
    // reap could hit a stranger's group that took the number.
    siginfo_t info{};
    int status = 0;
    pid_t pid = 0;
    if (waitid(P_ALL, 0, &info, WEXITED | WSTOPPED | WNOHANG | WNOWAIT) < 0) {
      if (errno == ECHILD) break;
      pid = -1;
    } else if (info.si_pid != 0) {
      if (info.si_code != CLD_STOPPED) kill(-info.si_pid, SIGKILL);
      pid = waitpid(info.si_pid, &status, WNOHANG | WUNTRACED);
    }
    if (pid > 0 && WIFSTOPPED(status)) {
      for (auto& w : workers) {
        if (w.exit.pid != pid || !w.running || w.stop_reported || stopping) continue;
        w.stop_reported = true;
        const int sig = WSTOPSIG(status);
        const std::string line =
            fmt::format("rank {} (pid {}) is stopped by signal {} ({})", w.exit.rank, pid, sig, strsignal(sig));
        fmt::print(stderr, "dtbench launch: {}\n", line);
        if (opts.on_stopped) opts.on_stopped(line, opts.master_addr, opts.master_port);
      }
      continue;
    }
    if (pid > 0) {
      for (auto& w : workers) {
        if (w.exit.pid != pid || !w.running) continue;
        w.running = false;
        --running;
        if (WIFSIGNALED(status)) w.exit.signal = WTERMSIG(status);
        if (WIFEXITED(status)) w.exit.exit_code = WEXITSTATUS(status);
        w.exit.terminated_by_launcher = stopping;
        const bool failed = w.exit.signal != 0 || w.exit.exit_code != 0;
        if (opts.verbose) fmt::print(stderr, "dtbench launch: {}\n", describe(w.exit));
        if (failed && !stopping) {
          result.failure = describe(w.exit);
          result.exit_code = w.exit.signal != 0 ? 128 + w.exit.signal : w.exit.exit_code;
          if (running > 0) {
            fmt::print(stderr, "dtbench launch: {}; terminating the other {} worker(s)\n",
                       result.failure, running);
          } else {
            fmt::print(stderr, "dtbench launch: {}\n", result.failure);
          }
          if (opts.on_failure) opts.on_failure(result.failure);
          stopping = true;
          kill_deadline = std::chrono::steady_clock::now() + opts.grace;
          signal_all(workers, SIGTERM);
        }
      }
      continue;  // reap everything that is ready before sleeping
    }
    if (stopping && std::chrono::steady_clock::now() > kill_deadline) {
      signal_all(workers, SIGKILL);
      kill_deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (std::size_t i = 0; i < std::size(kForwarded); ++i)
    if (g_trapped[i]) sigaction(kForwarded[i], &old[i], nullptr);
  // A signal that came after the last worker was reaped, before the old
  // handlers were back, still ends the run (a sweep must not go on).
  if (const int late = g_forward_signal.exchange(0); late != 0 && forwarded == 0) forwarded = late;
  for (auto& w : workers) result.workers.push_back(w.exit);
  if (forwarded != 0 && result.failure.empty()) {
    result.exit_code = 128 + forwarded;
    result.failure = fmt::format("interrupted by signal {} ({})", forwarded, strsignal(forwarded));
    fmt::print(stderr, "dtbench launch: {}\n", result.failure);
  }
  if (forwarded != 0) g_interrupted_by = forwarded;
  return result;
}

}  // namespace dtbench::launch
