#include "comm/gloo/gloo_communicator.h"

#include <fmt/format.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "comm/error_text.h"
#include "comm/store.h"
#include "compat/c10d_compat.h"
#include "core/error.h"
#include "core/net_route.h"

namespace dtbench::comm {
namespace {

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return c10d::ReduceOp::SUM;
    case ReduceOp::kProd:
      return c10d::ReduceOp::PRODUCT;
    case ReduceOp::kMin:
      return c10d::ReduceOp::MIN;
    case ReduceOp::kMax:
      return c10d::ReduceOp::MAX;
    case ReduceOp::kAvg:
      return c10d::ReduceOp::AVG;
  }
  return c10d::ReduceOp::SUM;
}

// Wraps a c10d work handle; a post-step (copying a result into the caller's
// output) runs once the collective has completed.
class GlooWork : public Work {
 public:
  // `explain`: asked once when the work fails, for what is known about why
  // (a failure another node's launcher published); "" adds nothing.
  GlooWork(c10::intrusive_ptr<compat::C10dWork> work, std::string what,
           std::function<std::string()> explain, std::function<void()> post = nullptr)
      : work_(std::move(work)),
        what_(std::move(what)),
        explain_(std::move(explain)),
        post_(std::move(post)) {}

  void wait(std::chrono::milliseconds timeout) override {
    if (finished_) {
      if (error_) std::rethrow_exception(error_);
      return;
    }
    try {
      work_->wait(timeout);
      if (post_) post_();
    } catch (...) {
      error_ = with_cause(translate(std::current_exception(), "gloo " + what_));
    }
    finished_ = true;
    if (error_) std::rethrow_exception(error_);
  }

  bool done() override { return finished_ || work_->isCompleted(); }

  std::exception_ptr error() override {
    if (!finished_ && work_->isCompleted() && !work_->isSuccess())
      return translate(work_->exception(), "gloo " + what_);
    return error_;
  }

 private:
  std::exception_ptr with_cause(std::exception_ptr error) const {
    const std::string cause = explain_ ? explain_() : "";
    if (cause.empty()) return error;
    try {
      std::rethrow_exception(error);
    } catch (const TimeoutError& e) {
      return std::make_exception_ptr(TimeoutError(std::string(e.what()) + "; cause: " + cause));
    } catch (const CommError& e) {
      return std::make_exception_ptr(CommError(std::string(e.what()) + "; cause: " + cause));
    } catch (...) {
      return error;
    }
  }

  c10::intrusive_ptr<compat::C10dWork> work_;
  std::string what_;
  std::function<std::string()> explain_;
  std::function<void()> post_;
  bool finished_ = false;
  std::exception_ptr error_;
};

// Both halves of a sendrecv.
class PairWork : public Work {
 public:
  PairWork(WorkPtr a, WorkPtr b) : a_(std::move(a)), b_(std::move(b)) {}
  void wait(std::chrono::milliseconds timeout) override {
    const auto start = std::chrono::steady_clock::now();
    a_->wait(timeout);
    const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    b_->wait(std::max(std::chrono::milliseconds(1), timeout - spent));
  }
  bool done() override { return a_->done() && b_->done(); }
  std::exception_ptr error() override { return a_->error() ? a_->error() : b_->error(); }

 private:
  WorkPtr a_, b_;
};

constexpr int kSendrecvTag = 7001;

class GlooCommunicator : public Communicator {
 public:
  // group.store null: the whole job, through a store of its own.
  GlooCommunicator(const launch::World& world, const CommOptions& opts, const Group& group)
      : rank_(group.store ? group.rank : world.rank),
        size_(group.store ? group.size : world.world_size),
        timeout_(opts.timeout) {
    store_ = group.store ? group.store : connect_store(world, opts.timeout);
    const std::string prefix_name = group.store ? group.prefix : std::string("dtbench/gloo");
    auto pg_opts = c10d::ProcessGroupGloo::Options::create(opts.timeout);
    try {
      if (!opts.iface.empty()) {
        pg_opts->devices.push_back(compat::gloo_device_for_interface(opts.iface));
      } else if (launch::is_loopback(world.master_addr)) {
        pg_opts->devices.push_back(compat::gloo_device_for_hostname("127.0.0.1"));
      } else {
        // The address this host uses toward the master: the interface that
        // routes there, not whatever the host name resolves to.
        pg_opts->devices.push_back(
            compat::gloo_device_for_hostname(net::route_to(world.master_addr).local_addr));
      }
    } catch (const UsageError&) {
      throw;
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("gloo: cannot use interface '{}': {}",
                                   opts.iface.empty() ? "default" : opts.iface, one_line(e)));
    }
    pg_opts->threads = opts.gloo_threads;
    auto prefix = c10::make_intrusive<c10d::PrefixStore>(prefix_name, store_);
    pg_store_ = prefix;
    try {
      pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(prefix, rank_, size_, pg_opts);
    } catch (const std::exception& e) {
      throw CommError(fmt::format(
          "gloo: rank {} could not connect to its peers within {} ms (is a rank missing or "
          "unreachable?): {}",
          rank_, timeout_.count(), one_line(e)));
    }
  }

  std::string backend() const override { return "gloo"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::chrono::milliseconds timeout() const override { return timeout_; }

  // What this LibTorch's ProcessGroupGloo refuses (compat::gloo_limits).
  std::string unsupported_reason(Collective c, DType dtype, ReduceOp op) const override {
    if (c == Collective::kSendrecv && size_ < 2) return "gloo: sendrecv needs at least 2 ranks";
    const auto limits = compat::gloo_limits();
    if (dtype == DType::kBFloat16 && !limits.bfloat16) return limits.why_bfloat16;
    if (is_reduction(c) && op == ReduceOp::kAvg && !limits.avg) return limits.why_avg;
    if (is_reduction(c) && op == ReduceOp::kAvg && !limits.avg_integers &&
        (dtype == DType::kInt32 || dtype == DType::kInt64))
      return limits.why_avg_integers;
    if (c == Collective::kReduceScatter && !limits.reduce_scatter) return limits.why_reduce_scatter;
    return "";
  }

  // Zero-element collectives complete at once on every rank: gloo's
  // allgather divides by the element count and dies with SIGFPE on 0.
  WorkPtr allreduce(const at::Tensor& in, at::Tensor& out, ReduceOp op) override {
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    copy_if_needed(in, out);
    std::vector<at::Tensor> ts{out};
    c10d::AllreduceOptions o;
    o.reduceOp = to_c10d(op);
    o.timeout = timeout_;
    return wrap([&] { return pg_->allreduce(ts, o); }, "allreduce");
  }

  WorkPtr broadcast(const at::Tensor& in, at::Tensor& out, int root) override {
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    if (rank_ == root) copy_if_needed(in, out);
    std::vector<at::Tensor> ts{out};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    o.timeout = timeout_;
    return wrap([&] { return pg_->broadcast(ts, o); }, "broadcast");
  }

  WorkPtr reduce(const at::Tensor& in, at::Tensor& out, int root, ReduceOp op) override {
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    copy_if_needed(in, out);
    std::vector<at::Tensor> ts{out};
    c10d::ReduceOptions o;
    o.reduceOp = to_c10d(op);
    o.rootRank = root;
    o.timeout = timeout_;
    return wrap([&] { return pg_->reduce(ts, o); }, "reduce");
  }

  WorkPtr allgather(const at::Tensor& in, at::Tensor& out) override {
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    // ProcessGroupGloo gathers into a list of tensors; views of `out` receive
    // the chunks without an extra copy on our side.
    std::vector<std::vector<at::Tensor>> outs(1);
    const int64_t n = in.numel();
    auto flat = out.view({-1});
    for (int r = 0; r < size_; ++r) outs[0].push_back(flat.narrow(0, r * n, n));
    std::vector<at::Tensor> ins{in};
    c10d::AllgatherOptions o;
    o.timeout = timeout_;
    return wrap([&] { return pg_->allgather(outs, ins, o); }, "allgather");
  }

  WorkPtr reduce_scatter(const at::Tensor& in, at::Tensor& out, ReduceOp op) override {
    const std::string why = unsupported_reason(Collective::kReduceScatter, from_scalar_type(in.scalar_type()), op);
    if (!why.empty()) throw UnsupportedError(why);
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    std::vector<at::Tensor> outs{out};
    std::vector<std::vector<at::Tensor>> ins(1);
    const int64_t n = out.numel();
    auto flat = in.view({-1});
    for (int r = 0; r < size_; ++r) ins[0].push_back(flat.narrow(0, r * n, n));
    c10d::ReduceScatterOptions o;
    o.reduceOp = to_c10d(op);
    o.timeout = timeout_;
    return wrap([&] { return pg_->reduce_scatter(outs, ins, o); }, "reduce_scatter");
  }

  WorkPtr alltoall(const at::Tensor& in, at::Tensor& out) override {
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    std::vector<int64_t> splits;  // empty: equal splits
    c10d::AllToAllOptions o;
    o.timeout = timeout_;
    at::Tensor input = in;  // alltoall_base takes non-const references
    return wrap([&] { return pg_->alltoall_base(out, input, splits, splits, o); }, "alltoall");
  }

  WorkPtr send(const at::Tensor& t, int dst, int tag) override {
    if (t.numel() == 0) return std::make_unique<CompletedWork>();
    std::vector<at::Tensor> ts{t};
    return wrap([&] { return pg_->send(ts, dst, tag); }, "send");
  }

  WorkPtr recv(at::Tensor& t, int src, int tag) override {
    if (t.numel() == 0) return std::make_unique<CompletedWork>();
    std::vector<at::Tensor> ts{t};
    return wrap([&] { return pg_->recv(ts, src, tag); }, "recv");
  }

  WorkPtr sendrecv(const at::Tensor& in, at::Tensor& out, int dst, int src) override {
    auto sent = send(in, dst, kSendrecvTag);
    auto received = recv(out, src, kSendrecvTag);
    return std::make_unique<PairWork>(std::move(sent), std::move(received));
  }

  void barrier() override {
    c10d::BarrierOptions o;
    o.timeout = timeout_;
    wrap([&] { return pg_->barrier(o); }, "barrier")->wait(timeout_);
  }

  c10::intrusive_ptr<c10d::ProcessGroup> c10d_group() const override {
    if (!group_) group_ = compat::gloo_process_group(pg_, pg_store_, rank_, size_);
    return group_;
  }

 private:
  c10::intrusive_ptr<c10d::Store> pg_store_;
  mutable c10::intrusive_ptr<c10d::ProcessGroup> group_;

  static void copy_if_needed(const at::Tensor& in, at::Tensor& out) {
    if (!in.is_same(out)) out.copy_(in);
  }

  template <typename Fn>
  WorkPtr wrap(Fn&& start, const std::string& what) {
    try {
      auto store = store_;
      return std::make_unique<GlooWork>(start(), what, [store]() {
        return published_failure(store, std::chrono::milliseconds(2000));
      });
    } catch (...) {
      std::rethrow_exception(translate(std::current_exception(), "gloo " + what));
    }
  }

  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(const launch::World& world,
                                                     const CommOptions& opts) {
  return std::make_unique<GlooCommunicator>(world, opts, Group{});
}

std::unique_ptr<Communicator> make_gloo_group_communicator(const launch::World& world,
                                                           const CommOptions& opts,
                                                           const Group& group) {
  DTBENCH_CHECK(group.store && group.rank >= 0 && group.rank < group.size, "gloo: bad group");
  return std::make_unique<GlooCommunicator>(world, opts, group);
}

}  // namespace dtbench::comm
