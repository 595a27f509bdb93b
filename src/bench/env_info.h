#pragma once
// The environment header every benchmark prints on rank 0 and stores in its
// JSON report: dtbench build, LibTorch and backend versions, threads, host
// facts (core/host_probe) and, when given, the job's world.
#include <nlohmann/json.hpp>

#include "launch/topology.h"
#include "launch/world.h"

namespace dtbench::bench {

nlohmann::ordered_json collect_env();
nlohmann::ordered_json world_json(const launch::World& world);
// With the measured topology: num_nodes and the label count the nodes seen,
// plus "node_of_rank" and "node_hosts".
nlohmann::ordered_json world_json(const launch::World& world, const launch::Topology& topo);

}  // namespace dtbench::bench
