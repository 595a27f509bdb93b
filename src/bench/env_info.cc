#include "bench/env_info.h"

#include <ATen/Parallel.h>

#include "build_config.h"
#include "comm/factory.h"
#include "core/allocator.h"
#include "core/host_probe.h"
#include "rpc/transport.h"

namespace dtbench::bench {

nlohmann::ordered_json collect_env() {
  nlohmann::ordered_json j;
  j["dtbench"] = {{"version", DTBENCH_VERSION},
                  {"build_type", DTBENCH_BUILD_TYPE},
                  {"compiler", DTBENCH_COMPILER},
                  {"libtorch_source", DTBENCH_TORCH_SOURCE},
                  {"cuda", DTBENCH_HAVE_CUDA ? "built in" : "not built"}};
  j["versions"] = comm::library_versions();
  nlohmann::ordered_json backends = nlohmann::ordered_json::array();
  for (const auto& b : comm::backends())
    if (b.built) backends.push_back(b.name);
  j["backends"] = backends;
  // TensorPipe transports and channels usable here (kvstore, hybrid).
  nlohmann::ordered_json transports = nlohmann::ordered_json::array();
  nlohmann::ordered_json channels = nlohmann::ordered_json::array();
  nlohmann::ordered_json unusable = nlohmann::ordered_json::array();
  for (const auto& c : rpc::components()) {
    if (!c.viable) unusable.push_back(c.name);
    else (c.kind == "transport" ? transports : channels).push_back(c.name);
  }
  j["tensorpipe"] = {{"transports", transports}, {"channels", channels}, {"not_usable_here", unusable}};
  j["malloc"] = alloc::to_json(alloc::current());
  j["threads"] = {{"intra_op", at::get_num_threads()}, {"inter_op", at::get_num_interop_threads()}};
  j["host"] = probe_host();
  return j;
}

nlohmann::ordered_json world_json(const launch::World& w) {
  return {{"rank", w.rank},
          {"world_size", w.world_size},
          {"local_world_size", w.local_world_size},
          {"num_nodes", w.num_nodes},
          {"label", w.label()},
          {"source", w.source},
          {"master", w.master_addr + ":" + std::to_string(w.master_port)}};
}

nlohmann::ordered_json world_json(const launch::World& world, const launch::Topology& topo) {
  auto w = world;
  w.num_nodes = topo.nodes();
  auto j = world_json(w);
  j["node_of_rank"] = topo.node_of_rank;
  j["node_hosts"] = topo.node_hosts;
  return j;
}

}  // namespace dtbench::bench
