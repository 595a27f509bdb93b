#include "launch/topology.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace dtbench::launch {

std::vector<int> Topology::ranks_on(int node) const {
  std::vector<int> out;
  for (int r = 0; r < ranks(); ++r)
    if (node_of_rank[r] == node) out.push_back(r);
  return out;
}

Topology topology_from_hosts(const std::vector<std::string>& host_ids) {
  Topology t;
  std::map<std::string, int> index;
  for (const auto& id : host_ids) {
    auto it = index.find(id);
    if (it == index.end()) {
      it = index.emplace(id, t.nodes()).first;
      t.node_hosts.push_back(id.substr(0, id.find('/')));
    }
    t.node_of_rank.push_back(it->second);
  }
  return t;
}

std::string describe_node(const Topology& t, int node) {
  const auto ranks = t.ranks_on(node);
  std::string list;
  if (ranks.size() == 1) {
    list = fmt::format("rank {}", ranks[0]);
  } else if (!ranks.empty() && ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size())) {
    list = fmt::format("ranks {}-{}", ranks.front(), ranks.back());
  } else {
    list = fmt::format("ranks {}", fmt::join(ranks, ","));
  }
  return fmt::format("node {} ({}, {})", node, t.node_hosts.at(static_cast<std::size_t>(node)), list);
}

std::vector<std::string> describe_nodes(const Topology& t) {
  std::vector<std::string> out;
  for (int n = 0; n < t.nodes(); ++n) out.push_back(describe_node(t, n));
  return out;
}

namespace {

template <typename Fold>
std::vector<double> per_node(const Topology& t, const std::vector<double>& per_rank, Fold fold) {
  DTBENCH_CHECK(static_cast<int>(per_rank.size()) == t.ranks(), "one value per rank");
  std::vector<double> out;
  for (int n = 0; n < t.nodes(); ++n) {
    std::vector<double> mine;
    for (int r : t.ranks_on(n)) mine.push_back(per_rank[static_cast<std::size_t>(r)]);
    out.push_back(mine.empty() ? 0.0 : fold(mine));
  }
  return out;
}

}  // namespace

std::vector<double> per_node_mean(const Topology& t, const std::vector<double>& per_rank) {
  return per_node(t, per_rank, [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  });
}

std::vector<double> per_node_max(const Topology& t, const std::vector<double>& per_rank) {
  return per_node(t, per_rank,
                  [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); });
}

}  // namespace dtbench::launch
