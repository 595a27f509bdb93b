// HangWatchdog: a watched call longer than the timeout is reported once, with
// its description; calls that end in time, and idle time, are not.
#include "core/hang_watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

namespace dtbench {
namespace {

using std::chrono::milliseconds;

struct Seen {
  std::mutex mu;
  int calls = 0;
  std::string what;
  std::int64_t bytes = 0;
  double seconds = 0;
};

HangWatchdog::OnHang record(Seen& s) {
  return [&s](const std::string& what, std::int64_t bytes, double seconds) {
    std::lock_guard<std::mutex> lock(s.mu);
    ++s.calls;
    s.what = what;
    s.bytes = bytes;
    s.seconds = seconds;
  };
}

TEST(HangWatchdog, ReportsACallPastTheTimeoutOnce) {
  Seen seen;
  {
    HangWatchdog w(milliseconds(80), record(seen));
    {
      auto scope = w.watch("allreduce", 4096);
      std::this_thread::sleep_for(milliseconds(400));
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.what, "allreduce");
  EXPECT_EQ(seen.bytes, 4096);
  EXPECT_GT(seen.seconds, 0.08);
  EXPECT_LT(seen.seconds, 0.4);
}

TEST(HangWatchdog, CallsWithinTheTimeoutAndIdleTimeAreNotReported) {
  Seen seen;
  {
    HangWatchdog w(milliseconds(200), record(seen));
    for (int i = 0; i < 20; ++i) {
      auto scope = w.watch("broadcast", 8);
      std::this_thread::sleep_for(milliseconds(10));  // 20 calls, 200 ms in all
    }
    std::this_thread::sleep_for(milliseconds(500));  // idle, longer than the timeout
  }
  EXPECT_EQ(seen.calls, 0);
}

TEST(HangWatchdog, StopsPromptlyWhenDestroyed) {
  Seen seen;
  const auto t0 = std::chrono::steady_clock::now();
  { HangWatchdog w(std::chrono::seconds(60), record(seen)); }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(500));
  EXPECT_EQ(seen.calls, 0);
}

}  // namespace
}  // namespace dtbench
