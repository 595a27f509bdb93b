#include "core/hang_watchdog.h"

#include <algorithm>

namespace dtbench {

HangWatchdog::HangWatchdog(std::chrono::milliseconds timeout, OnHang on_hang)
    : timeout_(timeout), on_hang_(std::move(on_hang)), thread_([this] { run(); }) {}

HangWatchdog::~HangWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::int64_t HangWatchdog::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

HangWatchdog::Scope HangWatchdog::watch(const char* what, std::int64_t bytes) {
  what_.store(what, std::memory_order_relaxed);
  bytes_.store(bytes, std::memory_order_relaxed);
  started_ns_.store(std::max<std::int64_t>(now_ns(), 1), std::memory_order_release);
  return Scope(this);
}

void HangWatchdog::run() {
  // A few looks per timeout: a hang is reported at most ~1/8 of the timeout
  // late, and an idle process wakes at most 10 times a second.
  const auto period = std::clamp(timeout_ / 8, std::chrono::milliseconds(5), std::chrono::milliseconds(1000));
  const std::int64_t limit_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout_).count();
  // A wake far later than asked means this process itself was suspended
  // (SIGSTOP, a debugger): the call it watches did not hang on a peer, so its
  // clock starts again. Without this, a stopped rank that MPI_Abort
  // continues would also report itself before it is killed.
  const std::int64_t suspended_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(2 * period + std::chrono::milliseconds(500)).count();
  std::int64_t last_wake = now_ns();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, period, [this] { return stop_; });
    if (stop_) break;
    const std::int64_t now = now_ns();
    const bool was_suspended = now - last_wake > suspended_ns;
    last_wake = now;
    std::int64_t started = started_ns_.load(std::memory_order_acquire);
    if (started == 0) continue;
    if (was_suspended) {
      started_ns_.compare_exchange_strong(started, now, std::memory_order_acq_rel);
      continue;
    }
    const std::int64_t running = now - started;
    if (running <= limit_ns) continue;
    const std::string what = what_.load(std::memory_order_relaxed);
    const std::int64_t bytes = bytes_.load(std::memory_order_relaxed);
    lock.unlock();
    on_hang_(what, bytes, static_cast<double>(running) / 1e9);
    return;  // once
  }
}

}  // namespace dtbench
