#include "comm/c10d/c10d_work.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

#include "comm/error_text.h"
#include "comm/store.h"

namespace dtbench::comm {
namespace {

class C10dWorkHandle : public Work {
 public:
  C10dWorkHandle(c10::intrusive_ptr<compat::C10dWork> work, std::string what,
                 std::function<std::string()> explain, std::function<void()> post,
                 std::shared_ptr<std::atomic<bool>> failed, bool poll, std::function<bool()> capturing)
      : work_(std::move(work)),
        what_(std::move(what)),
        explain_(std::move(explain)),
        post_(std::move(post)),
        failed_(std::move(failed)),
        poll_(poll),
        capturing_(std::move(capturing)) {}

  void wait(std::chrono::milliseconds timeout) override {
    if (finished_) {
      if (error_) std::rethrow_exception(error_);
      return;
    }
    try {
      if (capturing_ && capturing_()) {
        work_->wait();  // no timeout: the stream waits, the host does not
      } else {
        if (poll_) poll_until_completed(*work_, timeout);
        work_->wait(timeout);
        if (post_) post_();
      }
    } catch (...) {
      error_ = with_cause(translate(std::current_exception(), what_));
      failed_->store(true);
    }
    finished_ = true;
    for (auto& fn : after_wait_) fn();
    after_wait_.clear();
    if (error_) std::rethrow_exception(error_);
  }

  bool done() override { return finished_ || work_->isCompleted(); }

  void on_done(std::function<void()> fn) override {
    if (finished_) return fn();
    c10::intrusive_ptr<c10::ivalue::Future> future;
    try {
      future = work_->getFuture();
    } catch (const c10::Error&) {
      // This work type has no future (e.g. some point-to-point works): the
      // completion is then stamped when wait() returns, an upper bound.
      after_wait_.push_back(std::move(fn));
      return;
    }
    future->addCallback([fn = std::move(fn)](c10::ivalue::Future&) { fn(); });
  }

  std::exception_ptr error() override {
    if (!finished_ && work_->isCompleted() && !work_->isSuccess())
      return translate(work_->exception(), what_);
    return error_;
  }

 private:
  std::exception_ptr with_cause(std::exception_ptr error) const {
    return add_cause(error, explain_ ? explain_() : "");
  }

  c10::intrusive_ptr<compat::C10dWork> work_;
  std::string what_;
  std::function<std::string()> explain_;
  std::function<void()> post_;
  std::vector<std::function<void()>> after_wait_;
  std::shared_ptr<std::atomic<bool>> failed_;
  bool finished_ = false;
  bool poll_ = false;
  std::function<bool()> capturing_;
  std::exception_ptr error_;
};

// Several works as one: wait() waits for each in turn, in what is left of
// the timeout; done once all are.
class JoinedWork : public Work {
 public:
  explicit JoinedWork(std::vector<WorkPtr> works) : works_(std::move(works)) {}
  void wait(std::chrono::milliseconds timeout) override {
    const auto start = std::chrono::steady_clock::now();
    for (auto& w : works_) {
      const auto spent =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      w->wait(std::max(std::chrono::milliseconds(1), timeout - spent));
    }
  }
  bool done() override {
    return std::all_of(works_.begin(), works_.end(), [](const WorkPtr& w) { return w->done(); });
  }
  // fn runs once every work has completed: each counts down, the last runs
  // it (on whichever thread completes it; nothing refers to this handle).
  void on_done(std::function<void()> fn) override {
    if (works_.empty()) return fn();
    auto left = std::make_shared<std::atomic<std::size_t>>(works_.size());
    auto shared = std::make_shared<std::function<void()>>(std::move(fn));
    for (auto& w : works_)
      w->on_done([left, shared] {
        if (left->fetch_sub(1) == 1) (*shared)();
      });
  }
  std::exception_ptr error() override {
    for (auto& w : works_)
      if (auto e = w->error()) return e;
    return nullptr;
  }

 private:
  std::vector<WorkPtr> works_;
};

}  // namespace

WorkPtr wrap_c10d_work(c10::intrusive_ptr<compat::C10dWork> work, std::string what,
                       std::function<std::string()> explain, std::function<void()> post,
                       std::shared_ptr<std::atomic<bool>> failed, bool poll, std::function<bool()> capturing) {
  return std::make_unique<C10dWorkHandle>(std::move(work), std::move(what), std::move(explain),
                                          std::move(post), std::move(failed), poll, std::move(capturing));
}

WorkPtr pair_work(WorkPtr a, WorkPtr b) {
  std::vector<WorkPtr> works;
  works.push_back(std::move(a));
  works.push_back(std::move(b));
  return joined_work(std::move(works));
}

WorkPtr joined_work(std::vector<WorkPtr> works) { return std::make_unique<JoinedWork>(std::move(works)); }

void poll_until_completed(compat::C10dWork& work, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  while (!work.isCompleted()) {
    const auto waited = Clock::now() - start;
    if (waited >= timeout) return;
    if (waited < std::chrono::milliseconds(2)) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace dtbench::comm
