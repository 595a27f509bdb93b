// Nodes as measured (launch/topology), the route to the master
// (core/net_route), per-node figures of ddp/comm/kvstore reports, and the
// checked JSON accessors the report readers rely on.
#include <set>
#include <cmath>
#include <sstream>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/net_route.h"
#include "launch/topology.h"
#include "report/comm_reporter.h"
#include "report/ddp_record.h"
#include "report/json_io.h"
#include "report/node_share.h"

namespace dtbench {
namespace {

TEST(Topology, NodesNumberedByLowestRank) {
  // mpirun --map-by node: ranks alternate between two hosts.
  const auto t = launch::topology_from_hosts({"b/1/n", "a/1/n", "b/1/n", "a/1/n"});
  EXPECT_EQ(t.nodes(), 2);
  EXPECT_EQ(t.node_of_rank, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(t.node_hosts, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(t.ranks_on(1), (std::vector<int>{1, 3}));
  EXPECT_EQ(launch::describe_node(t, 0), "node 0 (b, ranks 0,2)");
}

TEST(Topology, SameHostNameOtherNamespaceIsAnotherNode) {
  const auto t = launch::topology_from_hosts({"vm/boot/net:[1]", "vm/boot/net:[1]", "vm/boot/net:[2]"});
  EXPECT_EQ(t.nodes(), 2);
  EXPECT_EQ(launch::describe_node(t, 0), "node 0 (vm, ranks 0-1)");
  EXPECT_EQ(launch::describe_node(t, 1), "node 1 (vm, rank 2)");
  EXPECT_EQ(launch::describe_nodes(t),
            (std::vector<std::string>{"node 0 (vm, ranks 0-1)", "node 1 (vm, rank 2)"}));
}

TEST(Topology, PerNodeMeanAndMax) {
  const auto t = launch::topology_from_hosts({"a", "a", "b", "b"});
  EXPECT_EQ(launch::per_node_mean(t, {1, 3, 10, 20}), (std::vector<double>{2, 15}));
  EXPECT_EQ(launch::per_node_max(t, {1, 3, 10, 20}), (std::vector<double>{3, 20}));
}

TEST(NetRoute, LoopbackRoutesThroughLo) {
  const auto r = net::route_to("127.0.0.1");
  EXPECT_EQ(r.local_addr, "127.0.0.1");
  EXPECT_EQ(r.iface, "lo");
  EXPECT_EQ(net::interface_address("lo"), "127.0.0.1");
}

TEST(NetRoute, BadNamesAreUsageErrors) {
  EXPECT_THROW(net::route_to("no-such-host.invalid"), UsageError);
  EXPECT_THROW(net::interface_address("nosuchif0"), UsageError);
}

// A store port chosen ahead of its bind must not be one an outgoing
// connection could take meanwhile: never inside the ephemeral range, never
// torch's or torchrun's default port.
TEST(NetRoute, PortCandidatesStayOutsideTheEphemeralRange) {
  const net::PortRange linux_default{32768, 60999};
  for (std::uint64_t draw = 0; draw < 20000; ++draw) {
    const int p = net::port_candidate(linux_default, draw);
    ASSERT_GE(p, 20000) << draw;
    ASSERT_LT(p, 30000) << draw;  // below Kubernetes' NodePort range too
    ASSERT_NE(p, 29500);
    ASSERT_NE(p, 29400);
  }
  // A range that starts low leaves the ports above it.
  const net::PortRange low{1024, 40000};
  for (std::uint64_t draw = 0; draw < 2000; ++draw) ASSERT_GT(net::port_candidate(low, draw), 40000) << draw;
  // Successive draws spread: 100 draws give (nearly) 100 ports.
  std::set<int> seen;
  for (std::uint64_t draw = 0; draw < 100; ++draw) seen.insert(net::port_candidate(linux_default, draw));
  EXPECT_GT(seen.size(), 95u);
  EXPECT_EQ(net::port_candidate(net::PortRange{1024, 65000}, 0), 0);  // no room: the kernel's choice
  EXPECT_EQ(net::port_candidate(net::PortRange{1024, 65535}, 0), 0);
}

TEST(NetRoute, AddressesLeaveOutLoopbackAndAFreePortBinds) {
  for (const auto& a : net::local_ipv4_addresses()) EXPECT_NE(a.rfind("127.", 0), 0u) << a;
  const int port = net::free_tcp_port();
  const auto ephemeral = net::ephemeral_ports();
  ASSERT_GT(port, 0);
  ASSERT_LE(port, 65535);
  EXPECT_TRUE(port < ephemeral.first || port > ephemeral.last) << port;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << "port " << port;
  ::close(fd);
}

TEST(NetRoute, HostIdentityCarriesTheNamespace) {
  const auto id = net::host_identity();
  EXPECT_NE(id.find("/net:["), std::string::npos) << id;
  EXPECT_EQ(id, net::host_identity());
}

TEST(DdpPerNode, SlowestRankOfEachNode) {
  report::DdpRun run;
  run.world_size = 4;
  run.nodes = 2;
  run.batch_per_rank = 10;
  for (int r = 0; r < 4; ++r) {
    report::RankSamples s;
    s.rank = r;
    s.node = r / 2;
    const double t = r == 3 ? 0.5 : 0.1;  // rank 3 straggles
    s.total = {t, t, t};
    s.comm_wait = {0.01 * r, 0.01 * r, 0.01 * r};
    s.forward = s.backward = s.optimizer = {0, 0, 0};
    run.ranks.push_back(s);
  }
  const auto f = report::per_node_figures(run);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1].ranks, (std::vector<int>{2, 3}));
  EXPECT_DOUBLE_EQ(f[0].p50_total, 0.1);
  EXPECT_DOUBLE_EQ(f[1].p50_total, 0.5);
  EXPECT_DOUBLE_EQ(f[0].examples_per_sec, 20 / 0.1);
  EXPECT_DOUBLE_EQ(f[1].p50_comm_wait, 0.03);
  const auto j = report::to_json(run);
  EXPECT_EQ(j.at("per_node").size(), 2u);
}

TEST(CommPerNode, LatenessAndLatestNode) {
  // Ranks 0,1 on node 0 and 2,3 on node 1; node 1's ranks start 40 and 60 us
  // after the median rank, so node 1 is the latest (median 50 us).
  report::CommRecord r;
  r.out_of_place.ran = true;
  r.out_of_place.time_us = 10;
  r.out_of_place.node_us = {8, 12};
  r.out_of_place.lateness_us = {0, 0, 40, 60};
  const std::vector<int> node_of_rank{0, 0, 1, 1};
  EXPECT_EQ(report::node_lateness({r}, node_of_rank, 2), (std::vector<double>{0, 50}));
  std::ostringstream out;
  report::CommConsoleReporter(out).nodes({r}, {"node 0 (a, ranks 0-1)", "node 1 (b, ranks 2-3)"}, node_of_rank);
  EXPECT_NE(out.str().find("node 1 (b, ranks 2-3)"), std::string::npos);
  EXPECT_NE(out.str().find("50.0 us  (latest)"), std::string::npos) << out.str();
  std::ostringstream one;
  report::CommConsoleReporter(one).nodes({r}, {"node 0"}, {0, 0, 0, 0});
  EXPECT_EQ(one.str(), "");  // nothing for a single node
  EXPECT_EQ(report::comm_record_from_json(report::to_json(r)).out_of_place.node_us, r.out_of_place.node_us);
  r.out_of_place.cpu_util = 0.75;
  EXPECT_EQ(report::comm_record_from_json(report::to_json(r)).out_of_place.cpu_util, 0.75);
  auto old = report::to_json(r);
  old.at("out_of_place").erase("cpu_util");  // a report written before it was measured
  EXPECT_EQ(report::comm_record_from_json(old).out_of_place.cpu_util, -1);
}

TEST(NodeShare, RolesAndSummedFigures) {
  const auto s = report::node_shares({0, 0, 1, 1}, {"node 0", "node 1"},
                                     {"worker", "worker", "server", "server"},
                                     {1.5, 2.5, std::nan(""), std::nan("")});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0].figure, 4.0);
  EXPECT_EQ(s[1].roles.at("server"), (std::vector<int>{2, 3}));
  EXPECT_DOUBLE_EQ(s[1].figure, 0.0);
  std::ostringstream out;
  report::print_node_shares(out, s, "GB/s");
  EXPECT_NE(out.str().find("node 0: worker rank 0,1; 4 GB/s"), std::string::npos) << out.str();
  EXPECT_EQ(report::to_json(s, "gbps")[1]["roles"]["server"].size(), 2u);
}

TEST(JsonReaders, IntegersMustBeIntegersInRange) {
  const auto j = report::Json::parse(R"({"a": 1e308, "b": 99999999999, "c": -1, "d": 7, "e": "7"})");
  EXPECT_THROW(report::json_field<int>(j, "a", "t"), UsageError);
  EXPECT_THROW(report::json_field<int>(j, "b", "t"), UsageError);
  EXPECT_THROW(report::json_field<std::uint64_t>(j, "c", "t"), UsageError);
  EXPECT_EQ(report::json_field<int>(j, "d", "t"), 7);
  EXPECT_EQ(report::json_field<std::int64_t>(j, "b", "t"), 99999999999);
  EXPECT_THROW(report::json_field<int>(j, "e", "t"), UsageError);
  EXPECT_EQ(report::json_value_or<int>(j, "missing", 3, "t"), 3);
  EXPECT_THROW(report::json_value_or<std::string>(j, "d", "x", "t"), UsageError);
  EXPECT_EQ(report::json_value_or<int>(report::Json::array(), "d", 5, "t"), 5);
}

TEST(JsonReaders, DepthOverflowAndPrintableErrors) {
  EXPECT_THROW(report::parse_json_text(std::string(100, '[') + std::string(100, ']'), "t"), UsageError);
  EXPECT_NO_THROW(report::parse_json_text("[[[[1]]]]", "t"));
  EXPECT_THROW(report::parse_json_text("[1e400]", "t"), UsageError);
  try {
    report::parse_json_text("\"\x01\xff", "t");
    FAIL();
  } catch (const UsageError& e) {
    for (unsigned char c : std::string(e.what())) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << e.what();
  }
  EXPECT_EQ(report::printable("a\nb\xff", 10), "a\\x0ab\\xff");
}

}  // namespace
}  // namespace dtbench
