#pragma once
// Which ranks share a node, as measured: every rank reports its
// net::host_identity() and ranks with the same identity are one node,
// numbered in order of their lowest rank. This, not the launcher's
// environment, gives the "2N/4R" labels and the per-node figures (mpirun
// may place ranks round-robin; two namespaces on one machine are two nodes).
// Pure: the gathering is in comm/topology.h.
#include <string>
#include <vector>

namespace dtbench::launch {

struct Topology {
  std::vector<int> node_of_rank;        // node index of each rank
  std::vector<std::string> node_hosts;  // host name of each node

  int nodes() const { return static_cast<int>(node_hosts.size()); }
  int ranks() const { return static_cast<int>(node_of_rank.size()); }
  std::vector<int> ranks_on(int node) const;
};

// From each rank's host identity ("hostname/boot-id/netns", see
// net::host_identity; anything after the first '/' only tells hosts apart).
Topology topology_from_hosts(const std::vector<std::string>& host_ids);

// "node 1 (gpu7, ranks 2-3)"; ranks that are not consecutive are listed.
std::string describe_node(const Topology& t, int node);

// describe_node for every node, in node order.
std::vector<std::string> describe_nodes(const Topology& t);

// Mean of `per_rank` over each node's ranks (per_rank.size() == ranks()).
std::vector<double> per_node_mean(const Topology& t, const std::vector<double>& per_rank);
// Maximum over each node's ranks.
std::vector<double> per_node_max(const Topology& t, const std::vector<double>& per_rank);

}  // namespace dtbench::launch
