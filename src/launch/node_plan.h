#pragma once
// What a Kubernetes controller tells each node's process about the job, read
// for dtbench's own launcher (torchrun reads the same variables). Pure: the
// environment is passed in.
//  - Kubeflow Trainer (v2 TrainJob, its torch runtime): PET_NNODES,
//    PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT,
//    torchrun's --nnodes, --nproc-per-node, --node-rank, --master-addr,
//    --master-port (the training operator's v1 PyTorchJob sets RANK and
//    WORLD_SIZE per pod instead, read by world_from_env as one rank a pod);
//  - an indexed Job, or a JobSet's replicated job: JOB_COMPLETION_INDEX, the
//    pod's index, used as the node rank of a job of several nodes.
// (The MPI Operator runs mpirun with a hostfile: its ranks carry Open MPI's
// variables, read by world_from_env.)
#include <optional>
#include <string>

#include "launch/launcher.h"
#include "launch/world.h"

namespace dtbench::launch {

struct NodePlan {
  std::optional<int> nnodes;
  std::optional<int> nproc_per_node;
  std::optional<int> node_rank;  // PET_NODE_RANK
  std::optional<int> job_index;  // JOB_COMPLETION_INDEX
  std::optional<std::string> master_addr;
  std::optional<int> master_port;
  // The variables read, as set ("PET_NNODES=2 PET_NODE_RANK=1 ..."): what
  // the environment header reports; "" when none is set.
  std::string used;
  bool empty() const { return used.empty(); }
};

// Reads the variables above. Throws UsageError in one line naming the
// variable: not a number, an elastic range (PET_NNODES=1:4), a
// PET_NPROC_PER_NODE of "auto"/"gpu"/"cpu" (dtbench needs the number),
// PET_NODE_RANK and JOB_COMPLETION_INDEX that disagree. (A caller hides the
// variables whose flag was given, as torchrun's flags win over PET_*.)
NodePlan node_plan_from_env(const EnvLookup& env);

// Puts the plan into `lo` where it has a value: node count, ranks per node,
// node rank (PET_NODE_RANK; else JOB_COMPLETION_INDEX, once the job has
// several nodes: an indexed Job of one-node runs leaves every pod node 0),
// master address and port (torchrun's 29500 for a job of several nodes
// without one). `rank_given`/`addr_given`: --node-rank/--master-addr were
// on the command line. Throws UsageError in one line for a job of several
// nodes whose node rank or master address nothing gives, or a node rank not
// below the node count. Returns the variables it used ("" for none).
std::string apply_node_plan(const NodePlan& plan, LaunchOptions& lo, bool rank_given, bool addr_given);

// The variable that carries the plan's `used` line to the workers (and from
// them to the environment header).
inline constexpr const char* kNodePlanEnv = "DTBENCH_NODE_PLAN";

}  // namespace dtbench::launch
