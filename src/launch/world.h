#pragma once
// Where this process stands in the job: rank, world size, node, store
// address. Read from the environment of whatever started the process
// (dtbench's own launcher or torchrun, OpenMPI's mpirun, Slurm's srun,
// PMI/MPICH); with none of them it is a single rank. Pure: the environment is
// passed in, so every rule below has a unit test.
#include <functional>
#include <optional>
#include <string>

namespace dtbench::launch {

struct World {
  int rank = 0;              // global rank, 0 .. world_size-1
  int world_size = 1;        // number of ranks in the job
  int local_rank = 0;        // rank on this node
  int local_world_size = 1;  // ranks on this node
  int node_rank = 0;         // index of this node
  int num_nodes = 1;         // nodes in the job
  std::string master_addr = "127.0.0.1";  // host of rank 0's TCPStore
  int master_port = 29500;                // port of rank 0's TCPStore
  std::string source = "single";  // "torchrun", "ray", "openmpi", "slurm", "pmi" or "single"
  // master_addr came from MASTER_ADDR or Slurm's node list; under mpirun
  // without it, rank 0 publishes one through MPI (comm::resolve_master).
  bool master_given = false;
  bool master_port_given = false;
  // torchrun's agent hosts a TCPStore at MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True): every rank, 0 included, joins it as
  // a client, under a key prefix per restart (TORCHELASTIC_RESTART_COUNT).
  bool agent_store = false;
  int restart_count = 0;
  // DTBENCH_AGENT_STORE: the agent is dtbench's own launcher, whose store is
  // a TCPStore of this LibTorch version (a build that cannot join
  // torchrun's store joins this one); "" under torchrun.
  std::string agent_store_torch;
  // The Kubernetes variables dtbench's launcher took this node's place in the
  // job from ("PET_NNODES=2 PET_NODE_RANK=1 ..."; launch/node_plan.h), from
  // DTBENCH_NODE_PLAN; "" when none.
  std::string node_plan;

  // "2N/4R": the label used in every report row.
  std::string label() const;
};

// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The process environment (getenv).
EnvLookup process_env();

// Builds the World from the environment. Precedence: torchrun-style RANK +
// WORLD_SIZE, then OMPI_COMM_WORLD_*, then SLURM_PROCID/SLURM_NTASKS, then
// PMI_RANK/PMI_SIZE. MASTER_ADDR/MASTER_PORT override the store address from
// any source; under Slurm the default address is the first host of
// SLURM_JOB_NODELIST. Throws UsageError naming the variable on malformed or
// inconsistent values (RANK >= WORLD_SIZE, WORLD_SIZE=0, port out of range).
World world_from_env(const EnvLookup& env);

// First host of a Slurm node list: "node[01-04,07],gpu3" -> "node01".
// Throws UsageError on an empty or malformed list.
std::string first_slurm_host(const std::string& nodelist);
// Tasks on step-relative node `node` from SLURM_STEP_TASKS_PER_NODE
// ("2(x3),1": 2 on nodes 0-2, 1 on node 3); 0 when `node` is beyond the
// list (the caller keeps its own figure). Throws UsageError when malformed.
int slurm_tasks_on_node(const std::string& tasks_per_node, int node);

// True when MASTER_ADDR names this host's loopback ("127.x", "localhost", "::1").
bool is_loopback(const std::string& addr);
// The store port of a Slurm step without MASTER_PORT: a hash of job id and
// step id over 20000-29999 (below Linux's default ephemeral range, so no
// outgoing connection holds it where that default is kept, and below
// Kubernetes' NodePorts; never 29400 or 29500), the same on every node of
// the step. Two concurrent steps on one first node meet with probability
// about 1 in 10,000 (no pattern of ids does it more often); the second one's
// rank 0 then fails with "address in use" and the step's ranks find a
// foreign store's ranks taken: set MASTER_PORT.
int slurm_store_port(long long job_id, long long step_id);

}  // namespace dtbench::launch
