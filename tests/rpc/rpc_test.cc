// dtbench's RPC over real TensorPipe pipes in one process (server and
// clients on their own nodes): concurrent requests matched by id, replies
// into caller buffers, inline and channel-sized parts, errors, timeouts, a
// server that goes away, and the raw echo ceiling. Each transport/channel
// combination available here is exercised.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "core/error.h"
#include "rpc/node.h"
#include "rpc/raw_echo.h"

namespace dtbench::rpc {
namespace {

// Echoes part 0 back reversed; op 2 is never answered; op 3 fails; op 9 is
// refused on arrival.
class EchoService : public Service {
 public:
  explicit EchoService(Server& s) : server_(s) {
    for (std::uint64_t k = 0; k < 64; ++k) {
      in_[k];
      out_[k];
    }
  }
  std::vector<Buffer> receive_into(const Header& h, const std::vector<std::size_t>& lengths) override {
    if (h.op == 9) throw CommError("op 9 is refused");
    std::vector<Buffer> out;
    auto& slot = in_.at(h.key % 64);
    slot.resize(lengths.empty() ? 0 : lengths[0]);
    if (!lengths.empty()) out.push_back({slot.data(), slot.size()});
    return out;
  }
  void handle(Request req) override {
    ++handled;
    if (req.header.op == 2) return;
    if (req.header.op == 3) return server_.reply_error(req.peer, req.header, "op 3 always fails");
    auto& in = in_.at(req.header.key % 64);
    auto& out = out_.at(req.header.key % 64);
    out.assign(in.rbegin(), in.rend());
    Header h = req.header;
    h.arg0 = static_cast<std::int64_t>(req.header.key) * 2;
    server_.reply(req.peer, h,
                  out.empty() ? std::vector<Buffer>{} : std::vector<Buffer>{{out.data(), out.size()}});
  }
  std::atomic<int> handled{0};

 private:
  Server& server_;
  std::map<std::uint64_t, std::vector<char>> in_, out_;
};

TransportOptions options(const std::string& transport, const std::string& channel) {
  TransportOptions o;
  o.transport = transport;
  o.channel = channel;
  o.timeout = std::chrono::milliseconds(3000);
  return o;
}

class RpcTest : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(RpcTest, ConcurrentRequestsGetTheirOwnReplies) {
  const auto o = options(GetParam().first, GetParam().second);
  Node snode(o, "test server");
  Server server(snode);
  EchoService svc(server);
  server.start(&svc);
  Node cnode(o, "test client");
  Client client(cnode, pick_url(server.endpoint(), o), "test server", 5);
  // Sizes straddle the inline limit: payloads and channel tensors.
  const std::vector<std::size_t> sizes{1, 100, kInlineLimit, kInlineLimit + 1, 3 << 20};
  std::vector<std::vector<char>> sent, got;
  std::vector<std::shared_ptr<Call>> calls;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    sent.emplace_back(sizes[k]);
    for (std::size_t i = 0; i < sizes[k]; ++i) sent[k][i] = static_cast<char>(i * 7 + k);
    got.emplace_back(sizes[k]);
  }
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    Header h;
    h.op = 1;
    h.key = k;
    calls.push_back(client.call(h, {{sent[k].data(), sizes[k]}}, {{got[k].data(), sizes[k]}}));
  }
  for (std::size_t k = sizes.size(); k-- > 0;) {
    const auto reply = calls[k]->wait();
    EXPECT_EQ(reply.key, k);
    EXPECT_EQ(reply.arg0, static_cast<std::int64_t>(k * 2));
    EXPECT_TRUE(std::equal(sent[k].rbegin(), sent[k].rend(), got[k].begin())) << "request " << k;
  }
  EXPECT_EQ(svc.handled.load(), static_cast<int>(sizes.size()));
  client.close();
  cnode.close();
  server.stop();
  snode.close();
}

TEST_P(RpcTest, ErrorsTimeoutsAndADeadServerAreReported) {
  const auto o = options(GetParam().first, GetParam().second);
  auto snode = std::make_unique<Node>(o, "test server");
  auto server = std::make_unique<Server>(*snode);
  EchoService svc(*server);
  server->start(&svc);
  Node cnode(o, "test client");
  Client client(cnode, pick_url(server->endpoint(), o), "server X", 1);
  char byte = 1;
  Header h;
  h.op = 3;
  try {
    client.request(h, {{&byte, 1}});
    FAIL() << "no error";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("op 3 always fails"), std::string::npos) << e.what();
  }
  h.op = 9;  // refused in receive_into: the pipe stays usable
  EXPECT_THROW(client.request(h, {{&byte, 1}}), CommError);
  h.op = 1;
  char back = 0;
  EXPECT_NO_THROW(client.request(h, {{&byte, 1}}, {{&back, 1}}));
  EXPECT_EQ(back, 1);

  Node cnode2(o, "test client 2");
  Client client2(cnode2, pick_url(server->endpoint(), o), "server X", 2);
  h.op = 2;  // never answered
  const auto t0 = std::chrono::steady_clock::now();
  try {
    client2.request(h, {{&byte, 1}});
    FAIL() << "no timeout";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("server X"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));

  // A reply of the wrong size is a protocol error, not silent truncation.
  Node cnode4(o, "test client 4");
  Client client4(cnode4, pick_url(server->endpoint(), o), "server X", 4);
  h.op = 1;
  char two[2];
  EXPECT_THROW(client4.request(h, {{&byte, 1}}, {{two, 2}}), CommError);

  // The server goes away: a request in flight fails fast, naming it.
  Node cnode3(o, "test client 3");
  Client client3(cnode3, pick_url(server->endpoint(), o), "server Y", 3);
  h.op = 2;
  auto pending = client3.call(h, {{&byte, 1}}, {});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server->stop();
  snode->close();
  try {
    pending->wait();
    FAIL() << "no error";
  } catch (const TimeoutError& e) {
    FAIL() << "timed out instead of failing fast: " << e.what();
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("server Y"), std::string::npos) << e.what();
  }
  EXPECT_THROW(client3.request(h, {{&byte, 1}}), CommError);
  client.close();
  client2.close();
  client3.close();
  client4.close();
  cnode.close();
  cnode2.close();
  cnode3.close();
  cnode4.close();
}

TEST_P(RpcTest, IdleServerWaitEndsAfterItsTimeout) {
  const auto o = options(GetParam().first, GetParam().second);
  Node snode(o, "lonely server");
  Server server(snode);
  EchoService svc(server);
  server.start(&svc);
  const auto why = server.wait(std::chrono::milliseconds(200));
  EXPECT_NE(why.find("no request for 200 ms"), std::string::npos) << why;
  server.stop();
}

TEST_P(RpcTest, RawEchoMovesTheBytes) {
  const auto o = options(GetParam().first, GetParam().second);
  Node snode(o, "raw server");
  RawEchoServer raw(snode);
  Node cnode(o, "raw client");
  const auto secs = raw_echo_rounds(cnode, {{pick_url(raw.endpoint(), o), {16, 1 << 20, 100}}}, 3, 1);
  EXPECT_EQ(secs.size(), 3u);
  for (double s : secs) EXPECT_GT(s, 0);
  cnode.close();
  raw.stop();
}

// The fair ceiling: several clients echo against several servers at once,
// with the same slot numbers and different sizes (each pipe has its own
// buffers on the server; an echo is checked byte for byte).
TEST_P(RpcTest, RawEchoManyClientsAgainstManyServersAtOnce) {
  const auto o = options(GetParam().first, GetParam().second);
  Node snode0(o, "raw server 0"), snode1(o, "raw server 1");
  RawEchoServer raw0(snode0), raw1(snode1);
  const std::string u0 = pick_url(raw0.endpoint(), o), u1 = pick_url(raw1.endpoint(), o);
  std::vector<std::vector<double>> secs(3);
  std::vector<std::string> errors(3);
  std::vector<std::thread> clients;
  for (int c = 0; c < 3; ++c)
    clients.emplace_back([&, c] {
      try {
        Node cnode(o, "raw client");
        const std::size_t a = (1u << 16) * static_cast<std::size_t>(c + 1), b = 100u + 7u * c;
        // Client 1 goes one target after another (hybrid's sequential
        // lookups); the others send to every target at once.
        secs[c] = raw_echo_rounds(cnode, {{u0, {a, b}}, {u1, {b, a, 3}}, {u1, {}}}, 20, 2, c == 1);
        cnode.close();
      } catch (const std::exception& e) {
        errors[c] = e.what();
      }
    });
  for (auto& t : clients) t.join();
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(errors[c], "") << "client " << c;
    EXPECT_EQ(secs[c].size(), 20u) << "client " << c;
  }
  raw0.stop();
  raw1.stop();
}

std::vector<std::pair<std::string, std::string>> combos() {
  std::vector<std::pair<std::string, std::string>> out{{"uv", "basic"}};
  bool shm = false, cma = false;
  for (const auto& c : components()) {
    if (c.name == "shm") shm = c.viable;
    if (c.name == "cma") cma = c.viable;
  }
  if (shm) out.push_back({"shm", "basic"});
  if (cma) out.push_back({"uv", "cma"});
  if (shm && cma) out.push_back({"auto", "auto"});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Transports, RpcTest, ::testing::ValuesIn(combos()),
                         [](const auto& info) { return info.param.first + "_" + info.param.second; });

}  // namespace
}  // namespace dtbench::rpc
