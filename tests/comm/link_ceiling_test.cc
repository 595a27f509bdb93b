// The link ceiling between nodes (bench/comm/link_ceiling), on real ranks
// over loopback, each rank posing as a node of its own: a ring of raw TCP
// streams is measured, and when a node's first rank cannot stream, every
// rank (rank 0 writes the report) names that node, its rank and its reason,
// not only rank 0's own.
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bench/comm/link_ceiling.h"
#include "comm/communicator.h"
#include "launch/topology.h"
#include "support/misrouting_communicator.h"

namespace dtbench::bench {
namespace {

launch::Topology a_node_per_rank(int ranks) {
  launch::Topology t;
  for (int r = 0; r < ranks; ++r) {
    t.node_of_rank.push_back(r);
    t.node_hosts.push_back(fmt::format("host{}", r));
  }
  return t;
}

TEST(LinkCeiling, ALoopbackRingIsMeasured) {
  auto& world = testing::test_comm();
  if (world.size() < 2) GTEST_SKIP() << "one rank: no link";
  std::string why;
  const double gbs = link_ceiling_gbs(world, a_node_per_rank(world.size()), "127.0.0.1", 0.05, &why);
  EXPECT_GT(gbs, 0) << why;
  EXPECT_EQ(why, "");
}

TEST(LinkCeiling, EveryRankNamesTheLinkThatFailed) {
  auto& world = testing::test_comm();
  if (world.size() < 2) GTEST_SKIP() << "one rank: no link";
  const int last = world.size() - 1;
  std::string why;
  const double gbs = link_ceiling_gbs(world, a_node_per_rank(world.size()),
                                      world.rank() == last ? "" : "127.0.0.1", 0.05, &why);
  EXPECT_EQ(gbs, 0);
  EXPECT_NE(why.find(fmt::format("node {} (host{}, rank {}): no address toward the other nodes", last, last, last)),
            std::string::npos)
      << why;
  // The others only saw it: not listed beside it.
  EXPECT_EQ(why.find("could not listen"), std::string::npos) << why;
}

}  // namespace
}  // namespace dtbench::bench
