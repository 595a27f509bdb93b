#include "report/node_share.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace dtbench::report {

std::vector<NodeShare> node_shares(const std::vector<int>& node_of_rank,
                                   const std::vector<std::string>& node_names,
                                   const std::vector<std::string>& role_of_rank,
                                   const std::vector<double>& figure_of_rank) {
  DTBENCH_CHECK(role_of_rank.size() == node_of_rank.size() &&
                    figure_of_rank.size() == node_of_rank.size(),
                "one role and one figure per rank");
  std::vector<NodeShare> out(node_names.size());
  for (std::size_t n = 0; n < out.size(); ++n) {
    out[n].node = static_cast<int>(n);
    out[n].name = node_names[n];
  }
  for (std::size_t r = 0; r < node_of_rank.size(); ++r) {
    const auto n = static_cast<std::size_t>(node_of_rank[r]);
    DTBENCH_CHECK(n < out.size(), "node index within node_names");
    out[n].roles[role_of_rank[r]].push_back(static_cast<int>(r));
    if (!std::isnan(figure_of_rank[r])) out[n].figure += figure_of_rank[r];
  }
  return out;
}

nlohmann::ordered_json to_json(const std::vector<NodeShare>& shares, const std::string& figure_key) {
  auto arr = nlohmann::ordered_json::array();
  for (const auto& s : shares) {
    nlohmann::ordered_json roles = nlohmann::ordered_json::object();
    for (const auto& [role, ranks] : s.roles) roles[role] = ranks;
    arr.push_back({{"node", s.node}, {"name", s.name}, {"roles", roles}, {figure_key, s.figure}});
  }
  return arr;
}

void print_node_shares(std::ostream& out, const std::vector<NodeShare>& shares,
                       const std::string& figure_unit) {
  if (shares.size() < 2) return;
  out << "# Per node:\n";
  for (const auto& s : shares) {
    std::string roles;
    for (const auto& [role, ranks] : s.roles)
      roles += fmt::format("{}{} rank {}", roles.empty() ? "" : "; ", role, fmt::join(ranks, ","));
    out << fmt::format("#   {}: {}; {:.4g} {}\n", s.name, roles, s.figure, figure_unit);
  }
  out.flush();
}

}  // namespace dtbench::report
