#include "launch/world.h"
#include "launch/node_plan.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "core/error.h"

namespace dtbench::launch {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(World, SingleRankWithoutLauncher) {
  const auto w = world_from_env(env_of({}));
  EXPECT_EQ(w.source, "single");
  EXPECT_EQ(w.world_size, 1);
  EXPECT_EQ(w.label(), "1N/1R");
  EXPECT_EQ(w.master_addr, "127.0.0.1");
  EXPECT_EQ(w.master_port, 29500);
}

TEST(World, Torchrun) {
  const auto w = world_from_env(env_of({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                                        {"LOCAL_WORLD_SIZE", "4"}, {"GROUP_RANK", "1"},
                                        {"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "1234"}}));
  EXPECT_EQ(w.source, "torchrun");
  EXPECT_EQ(w.rank, 5);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.node_rank, 1);
  EXPECT_EQ(w.num_nodes, 2);
  EXPECT_EQ(w.label(), "2N/8R");
  EXPECT_EQ(w.master_addr, "10.1.2.3");
  EXPECT_EQ(w.master_port, 1234);
  EXPECT_FALSE(w.agent_store);  // dtbench's launcher: rank 0 hosts the store
}

TEST(World, RayTrainVariablesFromDtbenchsRayDriver) {
  // Ray Train's names: NODE_RANK, not torchrun's GROUP_RANK.
  const auto w = world_from_env(env_of({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"},
                                        {"LOCAL_WORLD_SIZE", "1"}, {"NODE_RANK", "3"},
                                        {"DTBENCH_LAUNCHER", "ray"}, {"MASTER_ADDR", "10.0.0.1"},
                                        {"MASTER_PORT", "41000"}}));
  EXPECT_EQ(w.source, "ray");
  EXPECT_EQ(w.node_rank, 3);
  EXPECT_EQ(w.num_nodes, 4);
  EXPECT_EQ(w.label(), "4N/4R");
  EXPECT_FALSE(w.agent_store);
  // GROUP_RANK wins where both are set; without the marker it is torchrun.
  const auto t = world_from_env(env_of({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                                        {"GROUP_RANK", "1"}, {"NODE_RANK", "0"}}));
  EXPECT_EQ(t.source, "torchrun");
  EXPECT_EQ(t.node_rank, 1);
}

TEST(World, TorchrunAgentStore) {
  const auto w = world_from_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"},
                                        {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                        {"TORCHELASTIC_RESTART_COUNT", "3"}}));
  EXPECT_TRUE(w.agent_store);
  EXPECT_EQ(w.restart_count, 3);
  const auto off = world_from_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"},
                                          {"TORCHELASTIC_USE_AGENT_STORE", "False"}}));
  EXPECT_FALSE(off.agent_store);
  EXPECT_THROW(world_from_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"},
                                      {"TORCHELASTIC_RESTART_COUNT", "-1"}})),
               UsageError);
}

TEST(World, OpenMpi) {
  const auto w = world_from_env(env_of({{"OMPI_COMM_WORLD_RANK", "3"},
                                        {"OMPI_COMM_WORLD_SIZE", "4"},
                                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  EXPECT_EQ(w.source, "openmpi");
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.node_rank, 1);
  EXPECT_EQ(w.label(), "2N/4R");
}

TEST(World, SlurmUsesFirstHostOfNodeList) {
  const auto w = world_from_env(env_of({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"}, {"SLURM_STEP_ID", "0"},
                                        {"SLURM_LOCALID", "0"}, {"SLURM_NNODES", "2"},
                                        {"SLURM_NODEID", "1"},
                                        {"SLURM_JOB_NODELIST", "gpu[07-08]"}}));
  EXPECT_EQ(w.source, "slurm");
  EXPECT_EQ(w.master_addr, "gpu07");
  EXPECT_EQ(w.node_rank, 1);
  EXPECT_EQ(w.label(), "2N/4R");
}

// The old formula, 20000 + (job mod 1000) x 10 + step mod 10, gave jobs
// 1007 and 2007 one port, steps 0 and 10 one port, and job 950's step 0
// torch's default 29500.
TEST(World, SlurmStorePortsFollowNoPatternOfIds) {
  EXPECT_NE(slurm_store_port(1007, 0), slurm_store_port(2007, 0));
  EXPECT_NE(slurm_store_port(7, 0), slurm_store_port(7, 10));
  EXPECT_NE(slurm_store_port(950, 0), 29500);
  EXPECT_EQ(slurm_store_port(4242, 1), slurm_store_port(4242, 1));  // every node of a step agrees
  std::set<int> ports;
  for (long long job = 1000; job < 3000; ++job) {
    const int p = slurm_store_port(job, 0);
    ASSERT_GE(p, 20000) << job;
    ASSERT_LT(p, 30000) << job;  // below Linux's ephemeral range and Kubernetes' NodePorts
    ASSERT_NE(p, 29500) << job;
    ports.insert(p);
  }
  // 2000 draws over ~10,000 ports: about 1,810 distinct if spread at random.
  EXPECT_GT(ports.size(), 1760u);
  for (long long step = 0; step < 100; ++step) ports.insert(slurm_store_port(77, step));
  EXPECT_GT(ports.size(), 1845u);
}

TEST(World, SlurmStepsGetAStorePortOfTheirOwn) {
  auto slurm = [](std::map<std::string, std::string> extra) {
    std::map<std::string, std::string> e{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                                         {"SLURM_STEP_ID", "0"}, {"SLURM_JOB_NODELIST", "n1"}};
    for (const auto& [k, v] : extra) e[k] = v;
    return world_from_env(env_of(e));
  };
  EXPECT_EQ(slurm({{"SLURM_JOB_ID", "12345678"}, {"SLURM_STEP_ID", "3"}}).master_port,
            slurm_store_port(12345678, 3));
  EXPECT_EQ(slurm({{"SLURM_JOB_ID", "7"}}).master_port, slurm_store_port(7, 0));  // step 0
  EXPECT_NE(slurm({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "1"}}).master_port,
            slurm({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "2"}}).master_port);
  EXPECT_EQ(slurm({}).master_port, 29500);                     // no job id: the default
  EXPECT_EQ(slurm({{"SLURM_JOB_ID", "x1"}}).master_port, 29500);  // not a number: the default
  const auto given = slurm({{"SLURM_JOB_ID", "7"}, {"MASTER_PORT", "31000"}});
  EXPECT_EQ(given.master_port, 31000);  // MASTER_PORT wins
  EXPECT_TRUE(given.master_port_given);
}

// A step on a subset of the allocation (srun -N1 on the second node) meets
// on its own first node; -n5 -N2 puts 3 and 2 tasks on the nodes.
TEST(World, SlurmStepNodesAndTasksPerNode) {
  std::map<std::string, std::string> e{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "5"}, {"SLURM_STEP_ID", "0"},
                                       {"SLURM_LOCALID", "0"}, {"SLURM_NNODES", "2"},
                                       {"SLURM_STEP_NUM_NODES", "2"}, {"SLURM_NODEID", "1"},
                                       {"SLURM_STEP_TASKS_PER_NODE", "3,2"},
                                       {"SLURM_JOB_NODELIST", "n[01-04]"},
                                       {"SLURM_STEP_NODELIST", "n[03-04]"}};
  const auto w = world_from_env(env_of(e));
  EXPECT_EQ(w.master_addr, "n03");
  EXPECT_EQ(w.local_world_size, 2);
  EXPECT_EQ(w.node_rank, 1);
  EXPECT_EQ(w.num_nodes, 2);
  e["SLURM_NODEID"] = "0";
  e["SLURM_PROCID"] = "0";
  EXPECT_EQ(world_from_env(env_of(e)).local_world_size, 3);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 3), 1);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 4), 0);
  EXPECT_THROW(slurm_tasks_on_node("2(x", 0), UsageError);
  EXPECT_THROW(slurm_tasks_on_node("0", 0), UsageError);
}

// mpiexec (MPICH, Intel MPI) inside an sbatch script: every rank inherits
// the batch step's SLURM_PROCID=0; the per-process PMI_RANK must win.
TEST(World, PmiWinsOverAnInheritedSlurmRank) {
  const auto w = world_from_env(env_of({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"SLURM_PROCID", "0"},
                                        {"SLURM_NTASKS", "4"}, {"SLURM_JOB_NODELIST", "n1"}}));
  EXPECT_EQ(w.source, "pmi");
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.world_size, 2);
  // srun --mpi=pmi2: both agree, and Slurm's path also reads the node list.
  const auto s = world_from_env(env_of({{"PMI_RANK", "1"}, {"PMI_SIZE", "4"}, {"SLURM_PROCID", "1"},
                                        {"SLURM_STEPID", "2"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_NODELIST", "n1"}}));
  EXPECT_EQ(s.source, "slurm");
  EXPECT_EQ(s.master_addr, "n1");
}

// An interactive srun step in an `salloc -n 4` shell: one task, though the
// allocation has 4.
TEST(World, AStepCountsItsOwnTasks) {
  const auto w = world_from_env(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_STEP_ID", "0"},
                                        {"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_JOB_NODELIST", "n1"}}));
  EXPECT_EQ(w.source, "slurm");
  EXPECT_EQ(w.world_size, 1);
}

// The batch script itself (sbatch -n 2; no srun step): SLURM_PROCID=0 and
// SLURM_NTASKS=2 describe the allocation, not ranks Slurm started, so
// `--nproc 2` starts its own there (Slurm 22.05's batch step: no
// SLURM_STEP_ID, as tests/cli/slurm.sh shows).
TEST(World, ABatchScriptIsNotASlurmStep) {
  const auto w = world_from_env(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "9"},
                                        {"SLURM_JOB_NODELIST", "n1"}, {"SLURM_NNODES", "1"}}));
  EXPECT_EQ(w.source, "single");
  EXPECT_EQ(w.world_size, 1);
  // mpiexec in that script: its rank 0 agrees with the inherited
  // SLURM_PROCID=0 and SLURM_NTASKS, and is still PMI's rank 0 of 2.
  const auto m = world_from_env(env_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"SLURM_PROCID", "0"},
                                        {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n1"}}));
  EXPECT_EQ(m.source, "pmi");
  EXPECT_EQ(m.world_size, 2);
}

TEST(World, Pmi) {
  const auto w = world_from_env(env_of({{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}}));
  EXPECT_EQ(w.source, "pmi");
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.world_size, 3);
}

TEST(World, TorchrunWinsOverOtherLaunchers) {
  const auto w = world_from_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"},
                                        {"OMPI_COMM_WORLD_RANK", "1"},
                                        {"OMPI_COMM_WORLD_SIZE", "4"}}));
  EXPECT_EQ(w.source, "torchrun");
  EXPECT_EQ(w.world_size, 2);
}

TEST(World, RejectsMalformedValues) {
  const std::vector<std::map<std::string, std::string>> bad{
      {{"RANK", "2"}, {"WORLD_SIZE", "2"}},
      {{"RANK", "0"}, {"WORLD_SIZE", "0"}},
      {{"RANK", "x"}, {"WORLD_SIZE", "2"}},
      {{"RANK", "0"}},
      {{"RANK", "-1"}, {"WORLD_SIZE", "2"}},
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}},
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "12ab"}},
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", ""}},
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "3"}},
      {{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}},
  };
  for (const auto& vars : bad) EXPECT_THROW(world_from_env(env_of(vars)), UsageError);
}

TEST(World, SlurmNodeLists) {
  EXPECT_EQ(first_slurm_host("node01"), "node01");
  EXPECT_EQ(first_slurm_host("a,b,c"), "a");
  EXPECT_EQ(first_slurm_host("node[01-04,07],gpu3"), "node01");
  EXPECT_EQ(first_slurm_host("n[3,5-6]"), "n3");
  EXPECT_EQ(first_slurm_host("rack1-n[001-004]-ib"), "rack1-n001-ib");
  EXPECT_THROW(first_slurm_host(""), UsageError);
  EXPECT_THROW(first_slurm_host("node[]"), UsageError);
  EXPECT_THROW(first_slurm_host("node[01"), UsageError);
}

TEST(World, Loopback) {
  EXPECT_TRUE(is_loopback("127.0.0.1"));
  EXPECT_TRUE(is_loopback("localhost"));
  EXPECT_FALSE(is_loopback("10.0.0.1"));
}

}  // namespace
}  // namespace dtbench::launch

namespace dtbench::launch {
namespace {

EnvLookup plan_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string usage_error_of(const EnvLookup& env) {
  try {
    node_plan_from_env(env);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// Kubeflow Trainer's torch runtime sets torchrun's PET_* in every node's pod.
TEST(NodePlan, KubeflowTrainerVariables) {
  const auto p = node_plan_from_env(plan_env({{"PET_NNODES", "2"},
                                              {"PET_NPROC_PER_NODE", "4"},
                                              {"PET_NODE_RANK", "1"},
                                              {"PET_MASTER_ADDR", "bench-node-0-0.bench"},
                                              {"PET_MASTER_PORT", "29400"}}));
  EXPECT_EQ(p.nnodes, 2);
  EXPECT_EQ(p.nproc_per_node, 4);
  EXPECT_EQ(p.node_rank, 1);
  EXPECT_EQ(p.master_addr, "bench-node-0-0.bench");
  EXPECT_EQ(p.master_port, 29400);
  EXPECT_EQ(p.used,
            "PET_NNODES=2 PET_NPROC_PER_NODE=4 PET_NODE_RANK=1 PET_MASTER_ADDR=bench-node-0-0.bench "
            "PET_MASTER_PORT=29400");
  EXPECT_TRUE(node_plan_from_env(plan_env({})).empty());
  EXPECT_EQ(node_plan_from_env(plan_env({{"PET_NNODES", "3:3"}})).nnodes, 3);  // a fixed range
}

// An indexed Job or a JobSet's replicated job numbers its pods: the node
// rank of a job of several nodes; in an indexed Job of one-node runs every
// pod stays node 0 of its own job.
TEST(NodePlan, JobCompletionIndexIsTheNodeRankOfASeveralNodeJob) {
  const auto plan = node_plan_from_env(plan_env({{"JOB_COMPLETION_INDEX", "3"}}));
  LaunchOptions several;
  several.nnodes = 4;  // --nnodes 4
  several.master_port = 29600;
  EXPECT_EQ(apply_node_plan(plan, several, false, true), "JOB_COMPLETION_INDEX=3");
  EXPECT_EQ(several.node_rank, 3);
  EXPECT_EQ(several.master_port, 29600);
  LaunchOptions one;  // --nnodes 1 (the default)
  EXPECT_EQ(apply_node_plan(plan, one, false, false), "");
  EXPECT_EQ(one.node_rank, 0);
  LaunchOptions flagged;
  flagged.nnodes = 4;
  flagged.node_rank = 2;  // --node-rank 2 wins
  apply_node_plan(plan, flagged, true, true);
  EXPECT_EQ(flagged.node_rank, 2);
  EXPECT_EQ(node_plan_from_env(plan_env({{"JOB_COMPLETION_INDEX", "1"}, {"PET_NODE_RANK", "1"}})).node_rank, 1);
}

TEST(NodePlan, TrainerPlanFillsTheLaunchAndDefaultsThePort) {
  auto plan = node_plan_from_env(plan_env({{"PET_NNODES", "2"}, {"PET_NPROC_PER_NODE", "4"},
                                           {"PET_NODE_RANK", "1"}, {"PET_MASTER_ADDR", "m0"}}));
  LaunchOptions lo;
  EXPECT_EQ(apply_node_plan(plan, lo, false, false),
            "PET_NNODES=2 PET_NPROC_PER_NODE=4 PET_NODE_RANK=1 PET_MASTER_ADDR=m0");
  EXPECT_EQ(lo.nnodes, 2);
  EXPECT_EQ(lo.nproc_per_node, 4);
  EXPECT_EQ(lo.node_rank, 1);
  EXPECT_EQ(lo.master_addr, "m0");
  EXPECT_EQ(lo.master_port, 29500);  // torchrun's default
}

TEST(NodePlan, RefusesWhatItCannotRunInOneLine) {
  const auto disagree = usage_error_of(plan_env({{"PET_NODE_RANK", "0"}, {"JOB_COMPLETION_INDEX", "1"}}));
  EXPECT_NE(disagree.find("PET_NODE_RANK=0 and JOB_COMPLETION_INDEX=1 disagree"), std::string::npos) << disagree;
  const auto elastic = usage_error_of(plan_env({{"PET_NNODES", "1:4"}}));
  EXPECT_NE(elastic.find("not an elastic range"), std::string::npos) << elastic;
  const auto automatic = usage_error_of(plan_env({{"PET_NPROC_PER_NODE", "auto"}}));
  EXPECT_NE(automatic.find("numProcPerNode"), std::string::npos) << automatic;
  auto apply_error = [](std::map<std::string, std::string> vars) -> std::string {
    LaunchOptions lo;
    try {
      apply_node_plan(node_plan_from_env(plan_env(vars)), lo, false, false);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  const auto beyond = apply_error({{"PET_NNODES", "2"}, {"JOB_COMPLETION_INDEX", "2"}, {"PET_MASTER_ADDR", "m"}});
  EXPECT_NE(beyond.find("node rank 2 (from JOB_COMPLETION_INDEX) is not below the 2 nodes"), std::string::npos)
      << beyond;
  const auto no_rank = apply_error({{"PET_NNODES", "2"}, {"PET_MASTER_ADDR", "m"}});
  EXPECT_NE(no_rank.find("nothing gives this node's rank"), std::string::npos) << no_rank;
  const auto no_addr = apply_error({{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"PET_MASTER_PORT", "29400"}});
  EXPECT_NE(no_addr.find("nothing gives node 0's address"), std::string::npos) << no_addr;
  EXPECT_NE(usage_error_of(plan_env({{"PET_MASTER_PORT", "70000"}})).find("PET_MASTER_PORT"), std::string::npos);
  EXPECT_NE(usage_error_of(plan_env({{"PET_MASTER_ADDR", ""}})).find("PET_MASTER_ADDR is empty"), std::string::npos);
  for (const auto& e : {disagree, elastic, automatic, beyond, no_rank, no_addr})
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

}  // namespace
}  // namespace dtbench::launch
