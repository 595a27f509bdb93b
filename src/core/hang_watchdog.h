#pragma once
// Bounds calls that have no timeout of their own (MPI's blocking
// collectives): a thread that wakes a few times per timeout and, when one
// watched call has been running longer than the timeout, calls `on_hang`
// once with a description of it. Arming costs three atomic stores, so it can
// wrap every collective of a latency sweep. Time during which this process
// itself was suspended (SIGSTOP) does not count.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace dtbench {

class HangWatchdog {
 public:
  // on_hang(what, bytes, seconds running): runs on the watchdog thread, at
  // most once per watchdog. It may end the process (the MPI backend aborts
  // the job there).
  using OnHang = std::function<void(const std::string& what, std::int64_t bytes, double seconds)>;
  HangWatchdog(std::chrono::milliseconds timeout, OnHang on_hang);
  ~HangWatchdog();
  HangWatchdog(const HangWatchdog&) = delete;
  HangWatchdog& operator=(const HangWatchdog&) = delete;

  // Watches the call in progress until the Scope ends. `what` must outlive
  // the call (a string literal). Calls do not nest.
  class Scope {
   public:
    explicit Scope(HangWatchdog* w) : w_(w) {}
    ~Scope() {
      if (w_) w_->started_ns_.store(0, std::memory_order_release);
    }
    Scope(Scope&& o) noexcept : w_(o.w_) { o.w_ = nullptr; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;

   private:
    HangWatchdog* w_;
  };
  Scope watch(const char* what, std::int64_t bytes);

 private:
  void run();
  static std::int64_t now_ns();

  const std::chrono::milliseconds timeout_;
  const OnHang on_hang_;
  std::atomic<std::int64_t> started_ns_{0};  // 0: no call in progress
  std::atomic<const char*> what_{""};
  std::atomic<std::int64_t> bytes_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dtbench
