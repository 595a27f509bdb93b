// comm/c10d's completion poll, on a scripted c10d work in this process.
// ProcessGroupNCCL's wait(timeout) checks once, then sleeps a whole
// millisecond between checks (one-rank 64 MiB allgathers took 1.16 ms on an
// H200 instead of 0.066); nccl's handles poll first, so that wait finds the
// work done. The poll must return only once the work has completed, and at
// its deadline for a work that never does (c10d's wait then names the
// timeout).
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "comm/c10d/c10d_work.h"

namespace dtbench::comm {
namespace {

// A work that completes when the test says so, counting the checks and
// keeping the timeout its wait was given.
class ScriptedWork : public compat::C10dWork {
 public:
  bool isCompleted() override {
    ++checks;
    return done.load();
  }
  bool wait(std::chrono::milliseconds timeout) override {
    ++waits;
    waited_with = timeout;
    return true;
  }
  std::atomic<bool> done{false};
  std::atomic<int> checks{0};
  int waits = 0;
  std::chrono::milliseconds waited_with{-1};
};

TEST(WorkPoll, ReturnsOnlyOnceTheWorkHasCompleted) {
  auto work = c10::make_intrusive<ScriptedWork>();
  std::thread finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the 2-ms spin: the sleeps too
    work->done = true;
  });
  poll_until_completed(*work, std::chrono::seconds(30));
  const bool done_at_return = work->done.load();
  finisher.join();
  EXPECT_TRUE(done_at_return);
  EXPECT_GT(work->checks.load(), 1);
}

// Also a failed work: c10d's isCompleted() is true once it holds an
// exception, and the wait after the poll rethrows it.
TEST(WorkPoll, ACompletedWorkReturnsAtTheFirstCheck) {
  auto work = c10::make_intrusive<ScriptedWork>();
  work->done = true;
  poll_until_completed(*work, std::chrono::seconds(30));
  EXPECT_EQ(work->checks.load(), 1);
}

TEST(WorkPoll, GivesUpAtTheDeadline) {
  auto work = c10::make_intrusive<ScriptedWork>();
  const auto start = std::chrono::steady_clock::now();
  poll_until_completed(*work, std::chrono::milliseconds(30));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(work->done.load());
  EXPECT_GE(waited, std::chrono::milliseconds(30));
  EXPECT_LT(waited, std::chrono::seconds(10));  // not the work's own timeout, not forever
}

// While a CUDA graph is captured (`comm -G`), host waits are not allowed:
// nccl's handle then calls c10d's wait without a timeout (which only orders
// the stream; with one, ProcessGroupNCCL would query events on the host),
// and neither polls nor runs its post step (the device synchronise).
TEST(WorkPoll, UnderAGraphCaptureTheWaitOnlyOrdersTheStream) {
  for (const bool capturing : {true, false}) {
    auto work = c10::make_intrusive<ScriptedWork>();
    work->done = true;
    int posts = 0;
    auto handle = wrap_c10d_work(
        work, "nccl allreduce", [] { return std::string(); }, [&posts] { ++posts; },
        std::make_shared<std::atomic<bool>>(false), /*poll=*/true, [capturing] { return capturing; });
    handle->wait(std::chrono::seconds(30));
    SCOPED_TRACE(capturing ? "capturing" : "not capturing");
    EXPECT_EQ(work->waits, 1);
    EXPECT_EQ(work->waited_with, capturing ? ::kNoTimeout : std::chrono::milliseconds(30000));
    EXPECT_EQ(work->checks.load(), capturing ? 0 : 1);
    EXPECT_EQ(posts, capturing ? 0 : 1);
  }
}

}  // namespace
}  // namespace dtbench::comm
