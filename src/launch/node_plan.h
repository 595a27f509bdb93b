#pragma once
// What a Kubernetes controller tells each node's process about the job, read
// for dtbench's own launcher (torchrun reads the same variables). Pure: the
// environment is passed in.
//  - Kubeflow Trainer (v2 TrainJob; the training operator's elastic
//    PyTorchJob): PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK,
//    PET_MASTER_ADDR, PET_MASTER_PORT, torchrun's --nnodes,
//    --nproc-per-node, --node-rank, --master-addr, --master-port;
//  - an indexed Job, or a JobSet's replicated job: JOB_COMPLETION_INDEX, the
//    pod's index, used as the node rank.
// (The MPI Operator runs mpirun with a hostfile: its ranks carry Open MPI's
// variables, read by world_from_env.)
#include <optional>
#include <string>

#include "launch/world.h"

namespace dtbench::launch {

struct NodePlan {
  std::optional<int> nnodes;
  std::optional<int> nproc_per_node;
  std::optional<int> node_rank;
  std::optional<std::string> master_addr;
  std::optional<int> master_port;
  // The variables read, as set ("PET_NNODES=2 PET_NODE_RANK=1 ..."): what
  // the environment header reports; "" when none is set.
  std::string used;
  bool empty() const { return used.empty(); }
};

// Reads the variables above. Throws UsageError in one line naming the
// variable: not a number, an elastic range (PET_NNODES=1:4), a
// PET_NPROC_PER_NODE of "auto"/"gpu"/"cpu" (dtbench needs the number), a
// node rank not below the node count, PET_NODE_RANK and
// JOB_COMPLETION_INDEX that disagree.
NodePlan node_plan_from_env(const EnvLookup& env);

// The variable that carries the plan's `used` line to the workers (and from
// them to the environment header).
inline constexpr const char* kNodePlanEnv = "DTBENCH_NODE_PLAN";

}  // namespace dtbench::launch
