#include "launch/node_plan.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::launch {
namespace {

int number(const std::string& name, const std::string& text, int min_value, int max_value,
           const char* hint) {
  std::size_t pos = 0;
  long long x = 0;
  try {
    x = std::stoll(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != text.size())
    throw UsageError(fmt::format("environment: {}='{}' is not a number{}", name, text, hint));
  if (x < min_value || x > max_value)
    throw UsageError(fmt::format("environment: {}={} is out of range {}..{}", name, x, min_value, max_value));
  return static_cast<int>(x);
}

}  // namespace

NodePlan node_plan_from_env(const EnvLookup& env) {
  NodePlan p;
  auto note = [&p](const std::string& name, const std::string& value) {
    p.used += (p.used.empty() ? "" : " ") + name + "=" + value;
  };
  if (const auto v = env("PET_NNODES")) {
    note("PET_NNODES", *v);
    // torchrun's elastic MIN:MAX; a fixed size may be written N:N.
    const auto colon = v->find(':');
    if (colon != std::string::npos) {
      const int lo = number("PET_NNODES", v->substr(0, colon), 1, 100000, "");
      const int hi = number("PET_NNODES", v->substr(colon + 1), 1, 100000, "");
      if (lo != hi)
        throw UsageError(fmt::format("environment: PET_NNODES={}: dtbench runs a fixed number of nodes, not "
                                     "an elastic range (set numNodes, or --nnodes)",
                                     *v));
      p.nnodes = lo;
    } else {
      p.nnodes = number("PET_NNODES", *v, 1, 100000, "");
    }
  }
  if (const auto v = env("PET_NPROC_PER_NODE")) {
    note("PET_NPROC_PER_NODE", *v);
    p.nproc_per_node = number("PET_NPROC_PER_NODE", *v, 1, 1024,
                              " (dtbench needs the number of ranks per node, not torchrun's auto/gpu/cpu: "
                              "set numProcPerNode, or give the ranks per node on the command line)");
  }
  const auto pet_rank = env("PET_NODE_RANK");
  const auto index = env("JOB_COMPLETION_INDEX");
  if (pet_rank) {
    note("PET_NODE_RANK", *pet_rank);
    p.node_rank = number("PET_NODE_RANK", *pet_rank, 0, 99999, "");
  }
  if (index) {
    note("JOB_COMPLETION_INDEX", *index);
    p.job_index = number("JOB_COMPLETION_INDEX", *index, 0, 99999, "");
    if (p.node_rank && *p.node_rank != *p.job_index)
      throw UsageError(fmt::format("environment: PET_NODE_RANK={} and JOB_COMPLETION_INDEX={} disagree on this "
                                   "node's rank",
                                   *pet_rank, *index));
  }
  if (const auto v = env("PET_MASTER_ADDR")) {
    note("PET_MASTER_ADDR", *v);
    if (v->empty()) throw UsageError("environment: PET_MASTER_ADDR is empty");
    p.master_addr = *v;
  }
  if (const auto v = env("PET_MASTER_PORT")) {
    note("PET_MASTER_PORT", *v);
    p.master_port = number("PET_MASTER_PORT", *v, 1, 65535, "");
  }
  return p;
}

std::string apply_node_plan(const NodePlan& plan, LaunchOptions& lo, bool rank_given, bool addr_given) {
  std::string used;
  auto note = [&used](const std::string& item) { used += (used.empty() ? "" : " ") + item; };
  if (plan.nnodes) {
    lo.nnodes = *plan.nnodes;
    note(fmt::format("PET_NNODES={}", *plan.nnodes));
  }
  if (plan.nproc_per_node) {
    lo.nproc_per_node = *plan.nproc_per_node;
    note(fmt::format("PET_NPROC_PER_NODE={}", *plan.nproc_per_node));
  }
  std::string rank_from = rank_given ? "--node-rank" : "";
  if (plan.node_rank) {
    lo.node_rank = *plan.node_rank;
    rank_from = "PET_NODE_RANK";
    note(fmt::format("PET_NODE_RANK={}", *plan.node_rank));
  } else if (plan.job_index && lo.nnodes > 1 && !rank_given) {
    lo.node_rank = *plan.job_index;
    rank_from = "JOB_COMPLETION_INDEX";
    note(fmt::format("JOB_COMPLETION_INDEX={}", *plan.job_index));
  }
  if (plan.master_addr) {
    lo.master_addr = *plan.master_addr;
    note("PET_MASTER_ADDR=" + *plan.master_addr);
  }
  if (plan.master_port) {
    lo.master_port = *plan.master_port;
    note(fmt::format("PET_MASTER_PORT={}", *plan.master_port));
  }
  if (used.empty() || lo.nnodes <= 1) return used;
  // A job of several nodes, placed (in part) by the environment.
  if (rank_from.empty())
    throw UsageError(fmt::format("environment: {}: a job of {} nodes, but nothing gives this node's rank "
                                 "(PET_NODE_RANK, JOB_COMPLETION_INDEX or --node-rank)",
                                 used, lo.nnodes));
  if (!plan.master_addr && !addr_given)
    throw UsageError(fmt::format("environment: {}: a job of {} nodes, but nothing gives node 0's address "
                                 "(PET_MASTER_ADDR or --master-addr)",
                                 used, lo.nnodes));
  if (lo.node_rank >= lo.nnodes)
    throw UsageError(fmt::format("environment: node rank {} (from {}) is not below the {} nodes of the job",
                                 lo.node_rank, rank_from, lo.nnodes));
  if (lo.master_port == 0) lo.master_port = 29500;  // torchrun's default
  return used;
}

}  // namespace dtbench::launch
