// comm/liveness against a real c10d::TCPStore in this process: this process
// beats as rank 0 of a job of 3; rank 1 beats from a thread of the test,
// rank 2 never does. silent_ranks must name rank 2 (with the claim it made)
// and only it; a store that is gone must be named as such.
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/liveness.h"
#include "compat/c10d_compat.h"

namespace dtbench::comm {
namespace {

TEST(Liveness, StalledIsPure) {
  EXPECT_EQ(stalled({1, 5, 9}, {3, 5, 9}, 0), (std::vector<int>{1, 2}));
  EXPECT_EQ(stalled({1, 5, 9}, {3, 6, 10}, 0), (std::vector<int>{}));
  EXPECT_EQ(stalled({0, 0}, {0, 0}, 1), (std::vector<int>{0}));
  EXPECT_EQ(stalled({}, {}, 0), (std::vector<int>{}));
}

c10::intrusive_ptr<c10d::TCPStore> host_store() {
  auto opts = compat::tcp_store_options();
  opts.port = 0;  // any free port
  opts.isServer = true;
  opts.waitWorkers = false;
  opts.numWorkers = 1;
  opts.timeout = std::chrono::seconds(5);
  return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
}

TEST(Liveness, NamesTheRankWhoseBeatStoodStill) {
  auto store = host_store();
  const std::string claim = "pid 4242 on node7";
  const std::string value = claim + " (world size 3)";
  store->set("dtbench/job/rank/2", std::vector<std::uint8_t>(value.begin(), value.end()));
  StoreEndpoint at;
  at.addr = "127.0.0.1";
  at.port = store->getPort();
  start_heartbeat(at, 0, 3);
  std::atomic<bool> stop{false};
  std::thread rank1([&] {
    while (!stop) {
      store->add("dtbench/alive/1", 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const auto line = silent_ranks(std::chrono::milliseconds(1200));
  stop = true;
  rank1.join();
  EXPECT_NE(line.find("rank 2 (pid 4242 on node7) sent no heartbeat for 1.2 s"), std::string::npos) << line;
  EXPECT_EQ(line.find("rank 1"), std::string::npos) << line;
  EXPECT_EQ(line.find("rank 0"), std::string::npos) << line;  // this rank itself
  // This rank really beats: its counter moved.
  EXPECT_GT(store->add("dtbench/alive/0", 0), 0);
  stop_heartbeat();
}

TEST(Liveness, ARankThatSaidItIsGoneIsNotNamed) {
  auto store = host_store();
  StoreEndpoint at;
  at.addr = "127.0.0.1";
  at.port = store->getPort();
  // Rank 1 failed itself (or finished): it marked itself gone; rank 2 did not.
  store->set("dtbench/gone/1", std::vector<std::uint8_t>{'1'});
  start_heartbeat(at, 0, 3);
  const auto line = silent_ranks(std::chrono::milliseconds(1000));
  EXPECT_NE(line.find("rank 2 sent no heartbeat"), std::string::npos) << line;
  EXPECT_EQ(line.find("rank 1"), std::string::npos) << line;
  // This rank, failing, marked itself; a normal stop marks it too.
  EXPECT_TRUE(store->check({"dtbench/gone/0"}));
  stop_heartbeat();
}

TEST(Liveness, EveryRankBeatingNamesNobody) {
  auto store = host_store();
  StoreEndpoint at;
  at.addr = "127.0.0.1";
  at.port = store->getPort();
  start_heartbeat(at, 1, 2);
  std::atomic<bool> stop{false};
  std::thread rank0([&] {
    while (!stop) {
      store->add("dtbench/alive/0", 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  EXPECT_EQ(silent_ranks(std::chrono::milliseconds(1000)), "");
  stop = true;
  rank0.join();
  stop_heartbeat();
}

TEST(Liveness, AStoreThatIsGoneIsNamed) {
  int port = 0;
  {
    auto store = host_store();
    port = store->getPort();
  }  // the store (rank 0's) is gone
  StoreEndpoint at;
  at.addr = "127.0.0.1";
  at.port = port;
  start_heartbeat(at, 1, 2);
  const auto line = silent_ranks(std::chrono::milliseconds(1000));
  EXPECT_NE(line.find("hosted by rank 0, did not answer within 1.0 s"), std::string::npos) << line;
  stop_heartbeat();
  EXPECT_EQ(silent_ranks(std::chrono::milliseconds(100)), "");  // no heartbeat runs
}

}  // namespace
}  // namespace dtbench::comm
