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
                              "set numProcPerNode, or --nproc-per-node)");
  }
  const auto pet_rank = env("PET_NODE_RANK");
  const auto index = env("JOB_COMPLETION_INDEX");
  if (pet_rank) {
    note("PET_NODE_RANK", *pet_rank);
    p.node_rank = number("PET_NODE_RANK", *pet_rank, 0, 99999, "");
  }
  if (index) {
    note("JOB_COMPLETION_INDEX", *index);
    const int i = number("JOB_COMPLETION_INDEX", *index, 0, 99999, "");
    if (p.node_rank && *p.node_rank != i)
      throw UsageError(fmt::format("environment: PET_NODE_RANK={} and JOB_COMPLETION_INDEX={} disagree on this "
                                   "node's rank",
                                   *pet_rank, *index));
    p.node_rank = i;
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
  if (p.nnodes && p.node_rank && *p.node_rank >= *p.nnodes)
    throw UsageError(fmt::format("environment: node rank {} (from {}) is not below PET_NNODES={}", *p.node_rank,
                                 pet_rank ? "PET_NODE_RANK" : "JOB_COMPLETION_INDEX", *p.nnodes));
  return p;
}

}  // namespace dtbench::launch
