#include "launch/world.h"

#include <cstdint>
#include <cstdio>

#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"
#include "core/net_route.h"

namespace dtbench::launch {
namespace {

// A Slurm id (job ids pass a million on large clusters); nullopt when absent
// or not a plain non-negative number.
std::optional<long long> slurm_number(const EnvLookup& env, const std::string& name) {
  const auto v = env(name);
  if (!v || v->empty() || v->find_first_not_of("0123456789") != std::string::npos || v->size() > 18)
    return std::nullopt;
  return std::stoll(*v);
}

int parse_int(const EnvLookup& env, const std::string& name, int fallback, int min_value) {
  const auto v = env(name);
  if (!v) return fallback;
  std::size_t pos = 0;
  long long x = 0;
  try {
    x = std::stoll(*v, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != v->size())
    throw UsageError(fmt::format("environment: {}='{}' is not an integer", name, *v));
  if (x < min_value || x > 1'000'000)
    throw UsageError(fmt::format("environment: {}={} is out of range", name, x));
  return static_cast<int>(x);
}

int require_int(const EnvLookup& env, const std::string& name, int min_value) {
  if (!env(name)) throw UsageError(fmt::format("environment: {} is not set", name));
  return parse_int(env, name, 0, min_value);
}

void validate(const World& w, const std::string& rank_var, const std::string& size_var) {
  if (w.rank >= w.world_size)
    throw UsageError(fmt::format("environment: {}={} is not below {}={}", rank_var, w.rank,
                                 size_var, w.world_size));
  if (w.local_world_size < 1 || w.local_rank >= w.local_world_size)
    throw UsageError(fmt::format("environment: local rank {} is not below local world size {}",
                                 w.local_rank, w.local_world_size));
  if (w.local_world_size > w.world_size)
    throw UsageError(fmt::format("environment: local world size {} exceeds world size {}",
                                 w.local_world_size, w.world_size));
}

// An MPI launcher's world: rank and size required, the local ones optional,
// nodes filled rank-major.
void read_mpi_world(const EnvLookup& env, World& w, const char* source, const std::string& rank_var,
                    const std::string& size_var, const char* local_rank_var, const char* local_size_var) {
  w.source = source;
  w.rank = require_int(env, rank_var, 0);
  w.world_size = require_int(env, size_var, 1);
  w.local_rank = parse_int(env, local_rank_var, 0, 0);
  w.local_world_size = parse_int(env, local_size_var, w.world_size, 1);
  w.node_rank = w.rank / w.local_world_size;
}

// PMI's rank and size are Slurm's own (srun --mpi=pmi2), not an mpiexec's
// inside an allocation.
bool srun_step(const EnvLookup& env) { return env("SLURM_STEP_ID") || env("SLURM_STEPID"); }

bool same_as_slurm(const EnvLookup& env) {
  if (!srun_step(env)) return false;  // the batch script's SLURM_PROCID describes no rank
  const auto procid = env("SLURM_PROCID"), pmi = env("PMI_RANK");
  if (!procid || !pmi || *procid != *pmi) return false;
  const auto ntasks = env("SLURM_NTASKS"), size = env("PMI_SIZE");
  return !size || (ntasks && *ntasks == *size);
}

}  // namespace

std::string World::label() const { return fmt::format("{}N/{}R", num_nodes, world_size); }

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::string first_slurm_host(const std::string& nodelist) {
  if (nodelist.empty()) throw UsageError("environment: SLURM_JOB_NODELIST is empty");
  // The first entry ends at the first ',' outside brackets.
  std::string first;
  int depth = 0;
  for (char c : nodelist) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  const auto open = first.find('[');
  if (open == std::string::npos) return first;
  const auto close = first.find(']', open);
  if (close == std::string::npos || close == open + 1)
    throw UsageError(fmt::format("environment: malformed Slurm node list '{}'", nodelist));
  std::string range = first.substr(open + 1, close - open - 1);
  range = range.substr(0, range.find(','));
  range = range.substr(0, range.find('-'));
  return first.substr(0, open) + range + first.substr(close + 1);
}

int slurm_tasks_on_node(const std::string& tasks_per_node, int node) {
  int at = 0;
  std::size_t pos = 0;
  const auto bad = [&] {
    return UsageError(fmt::format("environment: malformed SLURM_STEP_TASKS_PER_NODE '{}'", tasks_per_node));
  };
  while (pos < tasks_per_node.size()) {
    std::size_t end = tasks_per_node.find(',', pos);
    if (end == std::string::npos) end = tasks_per_node.size();
    const std::string item = tasks_per_node.substr(pos, end - pos);
    int tasks = 0, repeat = 1;
    char tail = 0;
    if (std::sscanf(item.c_str(), "%d(x%d)%c", &tasks, &repeat, &tail) == 2) {
    } else if (std::sscanf(item.c_str(), "%d%c", &tasks, &tail) == 1) {
      repeat = 1;
    } else {
      throw bad();
    }
    if (tasks < 1 || repeat < 1) throw bad();
    if (node < at + repeat) return tasks;
    at += repeat;
    pos = end + 1;
  }
  return 0;
}

int slurm_store_port(long long job_id, long long step_id) {
  const auto draw = static_cast<std::uint64_t>(job_id) * 0x100000001B3ULL ^ static_cast<std::uint64_t>(step_id);
  return net::port_candidate(net::PortRange{32768, 60999}, draw);
}

bool is_loopback(const std::string& addr) {
  return addr.rfind("127.", 0) == 0 || addr == "localhost" || addr == "::1";
}

World world_from_env(const EnvLookup& env) {
  World w;
  int slurm_nodes = 0;  // the step's nodes, where Slurm says
  std::string rank_var = "RANK", size_var = "WORLD_SIZE";
  if (env("RANK") || env("WORLD_SIZE")) {
    // dtbench's Ray driver gives Ray Train's variables (NODE_RANK, not GROUP_RANK).
    const auto launcher = env("DTBENCH_LAUNCHER");
    w.source = launcher && *launcher == "ray" ? "ray" : "torchrun";
    w.rank = require_int(env, "RANK", 0);
    w.world_size = require_int(env, "WORLD_SIZE", 1);
    w.local_rank = parse_int(env, "LOCAL_RANK", w.rank, 0);
    w.local_world_size = parse_int(env, "LOCAL_WORLD_SIZE", w.world_size, 1);
    w.node_rank = parse_int(env, env("GROUP_RANK") ? "GROUP_RANK" : "NODE_RANK",
                            w.rank / w.local_world_size, 0);
    const auto agent = env("TORCHELASTIC_USE_AGENT_STORE");
    w.agent_store = agent && (*agent == "True" || *agent == "true" || *agent == "1");
    w.restart_count = parse_int(env, "TORCHELASTIC_RESTART_COUNT", 0, 0);
    if (w.agent_store) w.agent_store_torch = env("DTBENCH_AGENT_STORE").value_or("");
  } else if (env("OMPI_COMM_WORLD_RANK")) {
    rank_var = "OMPI_COMM_WORLD_RANK";
    size_var = "OMPI_COMM_WORLD_SIZE";
    read_mpi_world(env, w, "openmpi", rank_var, size_var, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
  } else if (env("PMI_RANK") && !same_as_slurm(env)) {
    // MPICH's or Intel MPI's mpiexec (inside an allocation each rank also
    // inherits the batch step's SLURM_PROCID=0): the per-process variable
    // wins. Under srun --mpi=pmi2 both agree and Slurm's own path below
    // reads the node list as well.
    rank_var = "PMI_RANK";
    size_var = "PMI_SIZE";
    read_mpi_world(env, w, "pmi", rank_var, size_var, "MPI_LOCALRANKID", "MPI_LOCALNRANKS");
  } else if (env("SLURM_PROCID") && srun_step(env)) {
    // Only an srun step's tasks were started by Slurm: the batch script
    // itself also has SLURM_PROCID=0 and SLURM_NTASKS (the allocation's)
    // but no step id, and runs as a single process (--nproc starts ranks).
    w.source = "slurm";
    rank_var = "SLURM_PROCID";
    // The step's tasks, not the allocation's (an interactive srun step in
    // an `salloc -n 4` shell is one task).
    size_var = env("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
    w.rank = require_int(env, rank_var, 0);
    w.world_size = require_int(env, size_var, 1);
    w.local_rank = parse_int(env, "SLURM_LOCALID", 0, 0);
    const int nodes = parse_int(env, env("SLURM_STEP_NUM_NODES") ? "SLURM_STEP_NUM_NODES" : "SLURM_NNODES", 1, 1);
    w.local_world_size = (w.world_size + nodes - 1) / nodes;
    w.node_rank = parse_int(env, "SLURM_NODEID", w.rank / w.local_world_size, 0);
    // The step's own tasks on this node ("-n5 -N2": 3 and 2, not 3 and 3).
    if (const auto per_node = env("SLURM_STEP_TASKS_PER_NODE"))
      if (const int here = slurm_tasks_on_node(*per_node, w.node_rank); here > 0) w.local_world_size = here;
    slurm_nodes = nodes;
    // The step's nodes first: a step on a subset of the allocation (srun -N1
    // on the second node, several per-node steps at once) meets on its own
    // first node, not the job's.
    const char* lists[] = {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"};
    for (const char* name : lists)
      if (const auto list = env(name)) {
        w.master_addr = first_slurm_host(*list);
        w.master_given = true;
        break;
      }
    // Steps of several jobs (or of one job) can share the first node: each
    // step gets a store port of its own unless MASTER_PORT says otherwise.
    if (const auto job = slurm_number(env, "SLURM_JOB_ID"))
      w.master_port = slurm_store_port(*job, slurm_number(env, "SLURM_STEP_ID").value_or(0));
  }
  validate(w, rank_var, size_var);
  w.num_nodes = slurm_nodes > 0 ? slurm_nodes : (w.world_size + w.local_world_size - 1) / w.local_world_size;
  if (const auto addr = env("MASTER_ADDR")) {
    if (addr->empty()) throw UsageError("environment: MASTER_ADDR is empty");
    w.master_addr = *addr;
    w.master_given = true;
  }
  w.node_plan = env("DTBENCH_NODE_PLAN").value_or("");
  w.master_port_given = env("MASTER_PORT").has_value();
  w.master_port = parse_int(env, "MASTER_PORT", w.master_port, 1);
  if (w.master_port > 65535)
    throw UsageError(fmt::format("environment: MASTER_PORT={} is out of range", w.master_port));
  return w;
}

}  // namespace dtbench::launch
