// The launcher with real processes (/bin/sh workers).
#include "launch/launcher.h"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "core/error.h"

namespace dtbench::launch {
namespace {

using Clock = std::chrono::steady_clock;

// Running, and not a zombie waiting for a parent that never reaps it (PID 1
// in a container may not).
bool alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_s, comm, state;
  if (!(stat >> pid_s >> comm >> state)) return false;
  return state != "Z";
}

LaunchOptions quick(int n) {
  LaunchOptions o;
  o.nproc_per_node = n;
  o.grace = std::chrono::milliseconds(1000);
  return o;
}

TEST(Launcher, AllSucceedAndSeeTheirRank) {
  char tmpl[] = "/tmp/dtbench-launch-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const auto r = launch(quick(3), {"/bin/sh", "-c",
                                   "echo $RANK $WORLD_SIZE $LOCAL_RANK $MASTER_ADDR > " + dir +
                                       "/out.$RANK"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.failure.empty());
  for (int i = 0; i < 3; ++i) {
    std::ifstream in(dir + "/out." + std::to_string(i));
    int rank = -1, world = -1, local = -1;
    std::string addr;
    in >> rank >> world >> local >> addr;
    EXPECT_EQ(rank, i);
    EXPECT_EQ(world, 3);
    EXPECT_EQ(local, i);
    EXPECT_EQ(addr, "127.0.0.1");
  }
  std::system(("rm -rf " + dir).c_str());
}

TEST(Launcher, FailedWorkerEndsTheOthersAndIsNamed) {
  const auto start = Clock::now();
  const auto r = launch(quick(3), {"/bin/sh", "-c", "if [ $RANK = 1 ]; then exit 7; fi; sleep 60"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_NE(r.failure.find("rank 1"), std::string::npos) << r.failure;
  for (const auto& w : r.workers) EXPECT_FALSE(alive(w.pid)) << "rank " << w.rank << " left behind";
}

TEST(Launcher, KilledWorkerIsReportedWithItsSignal) {
  const auto r =
      launch(quick(2), {"/bin/sh", "-c", "if [ $RANK = 1 ]; then kill -9 $$; fi; sleep 60"});
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_NE(r.failure.find("rank 1"), std::string::npos);
  EXPECT_NE(r.failure.find("signal 9"), std::string::npos);
}

TEST(Launcher, WorkerThatIgnoresSigtermIsKilledAfterGrace) {
  const auto start = Clock::now();
  const auto r = launch(quick(2), {"/bin/sh", "-c",
                                   "if [ $RANK = 0 ]; then exit 3; fi; trap '' TERM; sleep 60"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 3);
  for (const auto& w : r.workers) EXPECT_FALSE(alive(w.pid));
}

TEST(Launcher, GrandchildrenDoNotOutliveTheJob) {
  char tmpl[] = "/tmp/dtbench-launch-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  // Rank 0 starts a background sleeper and records its pid, then fails.
  const auto r = launch(quick(2), {"/bin/sh", "-c",
                                   "if [ $RANK = 0 ]; then sleep 60 & echo $! > " + dir +
                                       "/bg; sleep 0.2; exit 1; fi; sleep 60"});
  EXPECT_EQ(r.exit_code, 1);
  std::ifstream in(dir + "/bg");
  int bg = 0;
  in >> bg;
  ASSERT_GT(bg, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(alive(bg));
  std::system(("rm -rf " + dir).c_str());
}

TEST(Launcher, MissingCommandIsAnError) {
  const auto r = launch(quick(1), {"/nonexistent/program"});
  EXPECT_EQ(r.exit_code, 127);
}

TEST(Launcher, RejectsBadOptions) {
  EXPECT_THROW(launch(quick(0), {"true"}), UsageError);
  EXPECT_THROW(launch(quick(1), {}), UsageError);
  auto o = quick(1);
  o.nnodes = 2;
  o.node_rank = 2;
  EXPECT_THROW(launch(o, {"true"}), UsageError);
  o.node_rank = 1;
  o.master_port = 0;
  EXPECT_THROW(launch(o, {"true"}), UsageError);  // multi-node needs a port
}

}  // namespace
}  // namespace dtbench::launch
