#pragma once
// Per-node figures of jobs whose ranks have roles (kvstore workers and
// servers, hybrid master/trainers/servers): which roles each node holds and
// the sum of one per-rank figure (GB/s, examples/s) over its ranks.
// Torch-free; the node of each rank comes from launch::Topology.
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtbench::report {

struct NodeShare {
  int node = 0;
  std::string name;                              // "node 1 (gpu7, ranks 2-3)"
  std::map<std::string, std::vector<int>> roles;  // role -> ranks, e.g. "server" -> {2, 3}
  double figure = 0;                             // sum over the node's ranks that have one
};

// role_of_rank[r], figure_of_rank[r] (NaN: no figure) and node_of_rank[r]
// for every rank; node_names[n] for every node.
std::vector<NodeShare> node_shares(const std::vector<int>& node_of_rank,
                                   const std::vector<std::string>& node_names,
                                   const std::vector<std::string>& role_of_rank,
                                   const std::vector<double>& figure_of_rank);

// [{"node", "name", "roles": {role: [ranks]}, figure_key: sum}, ...]
nlohmann::ordered_json to_json(const std::vector<NodeShare>& shares, const std::string& figure_key);

// "# node 0 (vm, ranks 0-1): worker 0,1; 4.21 GB/s" per node, with a title
// line; prints nothing for a single node.
void print_node_shares(std::ostream& out, const std::vector<NodeShare>& shares,
                       const std::string& figure_unit);

}  // namespace dtbench::report
