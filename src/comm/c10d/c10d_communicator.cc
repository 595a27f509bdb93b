#include "comm/c10d/c10d_communicator.h"

#include "comm/c10d/c10d_work.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "comm/backends.h"
#include "comm/error_text.h"
#include "compat/c10d_compat.h"
#include "comm/store.h"
#include "core/error.h"
#include "core/log.h"

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

constexpr int kSendrecvTag = 7001;

class C10dCommunicator : public Communicator {
 public:
  explicit C10dCommunicator(C10dBackendSpec spec) : s_(std::move(spec)) {}

  std::exception_ptr explain_failure(std::exception_ptr error, const std::string& context) const override {
    auto translated = Communicator::explain_failure(error, context);
    if (translated == error) return error;  // not a peer failure
    failed_->store(true);
    return with_failure_cause(translated, s_.store);
  }
  ~C10dCommunicator() override {
    if (!s_.close) return;
    try {
      s_.close(!failed_->load() && std::uncaught_exceptions() == 0);
    } catch (const std::exception& e) {
      log::warn(fmt::format("{}: closing the communicator: {}", s_.name, one_line(e)));
    }
  }

  std::string backend() const override { return s_.name; }
  int rank() const override { return s_.rank; }
  int size() const override { return s_.size; }
  std::chrono::milliseconds timeout() const override { return s_.timeout; }

  std::string composite_reason(Collective c) const override { return s_.composite ? s_.composite(c) : ""; }
  std::string out_of_place_reason(Collective c) const override { return comm::out_of_place_reason(s_.name, c); }
  std::string staging_note(Collective c, bool device_buffers) const override {
    if (!device_buffers || s_.staging || s_.host_only.count(c) == 0) return "";
    return fmt::format("{}: {} of device buffers goes through host memory (copied there and back)", s_.name,
                       to_string(c));
  }
  std::string unsupported_reason(Collective c, DType dtype, ReduceOp op) const override {
    if (c == Collective::kBarrier) return "";  // no data: every dtype and op
    if (c == Collective::kSendrecv && s_.size < 2) return s_.name + ": sendrecv needs at least 2 ranks";
    if (c == Collective::kPingpong && s_.size != 2) return pingpong_ranks_reason(s_.name, s_.size);
    return s_.unsupported ? s_.unsupported(c, dtype, op) : "";
  }

  // Zero-element collectives complete at once on every rank: gloo's
  // allgather divides by the element count and dies with SIGFPE on 0.
  WorkPtr allreduce(const at::Tensor& in, at::Tensor& out, ReduceOp op) override {
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    copy_if_needed(in, out);
    Staging st(staging_for(Collective::kAllreduce, out));
    std::vector<at::Tensor> ts{st.inout(out)};
    c10d::AllreduceOptions o;
    o.reduceOp = to_c10d(op);
    o.timeout = s_.timeout;
    return wrap([&] { return s_.backend->allreduce(ts, o); }, "allreduce", st);
  }

  WorkPtr broadcast(const at::Tensor& in, at::Tensor& out, int root) override {
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    if (s_.rank == root) copy_if_needed(in, out);
    Staging st(staging_for(Collective::kBroadcast, out));
    std::vector<at::Tensor> ts{st.inout(out)};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    o.timeout = s_.timeout;
    return wrap([&] { return s_.backend->broadcast(ts, o); }, "broadcast", st);
  }

  WorkPtr reduce(const at::Tensor& in, at::Tensor& out, int root, ReduceOp op) override {
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    // c10d reduces in place, and a non-root's buffer is the backend's
    // scratch: out of place, a non-root reduces a copy and leaves `out` alone.
    at::Tensor target = out;
    if (s_.rank == root) copy_if_needed(in, out);
    else if (!in.is_same(out)) target = in.clone();
    Staging st(staging_for(Collective::kReduce, target));
    std::vector<at::Tensor> ts{st.inout(target)};
    c10d::ReduceOptions o;
    o.reduceOp = to_c10d(op);
    o.rootRank = root;
    o.timeout = s_.timeout;
    return wrap([&] { return s_.backend->reduce(ts, o); }, "reduce", st);
  }

  WorkPtr allgather(const at::Tensor& in, at::Tensor& out) override {
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    Staging st(staging_for(Collective::kAllgather, in));
    c10d::AllgatherOptions o;
    o.timeout = s_.timeout;
    if (flat(Collective::kAllgather, in)) {
      at::Tensor output = st.output(out);
      at::Tensor input = st.input(in);
      return wrap([&] { return s_.backend->_allgather_base(output, input, o); }, "allgather", st);
    }
    // The list form: views of `out` receive the chunks without an extra
    // copy on our side (the backend may still copy).
    std::vector<std::vector<at::Tensor>> outs(1);
    const int64_t n = in.numel();
    auto flat_out = st.output(out).view({-1});
    for (int r = 0; r < s_.size; ++r) outs[0].push_back(flat_out.narrow(0, r * n, n));
    std::vector<at::Tensor> ins{st.input(in)};
    return wrap([&] { return s_.backend->allgather(outs, ins, o); }, "allgather", st);
  }

  WorkPtr reduce_scatter(const at::Tensor& in, at::Tensor& out, ReduceOp op) override {
    const std::string why =
        unsupported_reason(Collective::kReduceScatter, from_scalar_type(in.scalar_type()), op);
    if (!why.empty()) throw UnsupportedError(why);
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    Staging st(staging_for(Collective::kReduceScatter, in));
    c10d::ReduceScatterOptions o;
    o.reduceOp = to_c10d(op);
    o.timeout = s_.timeout;
    if (flat(Collective::kReduceScatter, in)) {
      at::Tensor output = st.output(out);
      at::Tensor input = st.input(in);
      return wrap([&] { return s_.backend->_reduce_scatter_base(output, input, o); }, "reduce_scatter", st);
    }
    std::vector<at::Tensor> outs{st.output(out)};
    std::vector<std::vector<at::Tensor>> ins(1);
    const int64_t n = out.numel();
    auto flat_in = st.input(in).view({-1});
    for (int r = 0; r < s_.size; ++r) ins[0].push_back(flat_in.narrow(0, r * n, n));
    return wrap([&] { return s_.backend->reduce_scatter(outs, ins, o); }, "reduce_scatter", st);
  }

  WorkPtr alltoall(const at::Tensor& in, at::Tensor& out) override {
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    std::vector<int64_t> splits;  // empty: equal splits
    c10d::AllToAllOptions o;
    o.timeout = s_.timeout;
    Staging st(staging_for(Collective::kAlltoall, in));
    at::Tensor input = st.input(in);  // alltoall_base takes non-const references
    at::Tensor output = st.output(out);
    return wrap([&] { return s_.backend->alltoall_base(output, input, splits, splits, o); }, "alltoall", st);
  }

  WorkPtr alltoallv(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& in_splits,
                    const std::vector<std::int64_t>& out_splits) override {
    if (in.numel() == 0 && out.numel() == 0) return std::make_unique<CompletedWork>();
    std::vector<int64_t> ins(in_splits.begin(), in_splits.end()), outs(out_splits.begin(), out_splits.end());
    c10d::AllToAllOptions o;
    o.timeout = s_.timeout;
    Staging st(staging_for(Collective::kAlltoallv, in));
    at::Tensor input = st.input(in);
    at::Tensor output = st.output(out);
    return wrap([&] { return s_.backend->alltoall_base(output, input, outs, ins, o); }, "alltoallv", st);
  }

  WorkPtr allgatherv(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& counts) override {
    if (out.numel() == 0) return std::make_unique<CompletedWork>();
    c10d::AllgatherOptions o;
    o.timeout = s_.timeout;
    // Equal parts are an allgather (c10d's list form would flatten them
    // into a copy of its own).
    if (s_.uneven_lists && equal_parts(counts)) return allgather(in, out);
    if (s_.uneven_lists) {
      // c10d's list form takes uneven parts (ProcessGroupNCCL: a grouped
      // broadcast per rank, as Python's all_gather with uneven tensors).
      Staging st(staging_for(Collective::kAllgatherv, in));
      std::vector<std::vector<at::Tensor>> outs{parts_of(st.output(out), counts)};
      std::vector<at::Tensor> ins{st.input(in)};
      return wrap([&] { return s_.backend->allgather(outs, ins, o); }, "allgatherv", st);
    }
    // A broadcast from each rank of its part, into its place in `out`.
    auto parts = parts_of(out, counts);
    parts[static_cast<std::size_t>(s_.rank)].copy_(in);
    std::vector<WorkPtr> works;
    for (int r = 0; r < s_.size; ++r) {
      if (parts[static_cast<std::size_t>(r)].numel() == 0) continue;
      std::vector<at::Tensor> ts{parts[static_cast<std::size_t>(r)]};
      c10d::BroadcastOptions b;
      b.rootRank = r;
      b.timeout = s_.timeout;
      works.push_back(wrap([&] { return s_.backend->broadcast(ts, b); }, "allgatherv", Staging(std::nullopt)));
    }
    return joined_work(std::move(works));
  }

  WorkPtr reduce_scatter_v(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& counts,
                           ReduceOp op) override {
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    if (s_.uneven_lists && equal_parts(counts)) return reduce_scatter(in, out, op);
    if (s_.uneven_lists) {
      // c10d's list form takes uneven parts (ProcessGroupNCCL: a grouped
      // reduce per rank).
      Staging st(staging_for(Collective::kReduceScatterV, in));
      std::vector<at::Tensor> outs{st.output(out)};
      std::vector<std::vector<at::Tensor>> ins{parts_of(st.input(in), counts)};
      c10d::ReduceScatterOptions o;
      o.reduceOp = to_c10d(op);
      o.timeout = s_.timeout;
      return wrap([&] { return s_.backend->reduce_scatter(outs, ins, o); }, "reduce_scatter_v", st);
    }
    // An allreduce of a copy of the whole input; this rank's part is copied
    // to `out` once it has finished.
    at::Tensor whole = in.clone();
    std::vector<at::Tensor> ts{whole};
    c10d::AllreduceOptions o;
    o.reduceOp = to_c10d(op);
    o.timeout = s_.timeout;
    Staging st(std::nullopt);
    st.back.emplace_back(out, parts_of(whole, counts)[static_cast<std::size_t>(s_.rank)]);
    return wrap([&] { return s_.backend->allreduce(ts, o); }, "reduce_scatter_v", st);
  }

  WorkPtr send(const at::Tensor& t, int dst, int tag) override {
    if (t.numel() == 0) return std::make_unique<CompletedWork>();
    Staging st(staging_for(Collective::kSendrecv, t));
    std::vector<at::Tensor> ts{st.input(t)};
    return wrap([&] { return s_.backend->send(ts, dst, tag); }, "send", st);
  }

  WorkPtr recv(at::Tensor& t, int src, int tag) override {
    if (t.numel() == 0) return std::make_unique<CompletedWork>();
    Staging st(staging_for(Collective::kSendrecv, t));
    std::vector<at::Tensor> ts{st.output(t)};
    return wrap([&] { return s_.backend->recv(ts, src, tag); }, "recv", st);
  }

  WorkPtr sendrecv(const at::Tensor& in, at::Tensor& out, int dst, int src) override {
    if (s_.group_p2p && in.numel() > 0) {
      // One group, as ncclGroupStart/End around the pair.
      Staging st(staging_for(Collective::kSendrecv, in));
      std::vector<at::Tensor> sends{st.input(in)};
      std::vector<at::Tensor> recvs{st.output(out)};
      return wrap(
          [&] {
            return compat::coalesced(*s_.backend, [&] {
              s_.backend->send(sends, dst, kSendrecvTag);
              s_.backend->recv(recvs, src, kSendrecvTag);
            });
          },
          "sendrecv", st);
    }
    // Both halves are posted before either is waited for.
    auto sent = send(in, dst, kSendrecvTag);
    auto received = recv(out, src, kSendrecvTag);
    return pair_work(std::move(sent), std::move(received));
  }

  WorkPtr gather(const at::Tensor& in, at::Tensor& out, int root) override {
    if (in.numel() == 0) return std::make_unique<CompletedWork>();
    // c10d gathers into a list of tensors on the root (views of `out` here)
    // and takes an empty list elsewhere.
    Staging st(staging_for(Collective::kGather, in));
    std::vector<std::vector<at::Tensor>> outs;
    if (s_.rank == root) {
      outs.emplace_back();
      const int64_t n = in.numel();
      auto flat_out = st.output(out).view({-1});
      for (int r = 0; r < s_.size; ++r) outs[0].push_back(flat_out.narrow(0, r * n, n));
    }
    std::vector<at::Tensor> ins{st.input(in)};
    c10d::GatherOptions o;
    o.rootRank = root;
    o.timeout = s_.timeout;
    return wrap([&] { return s_.backend->gather(outs, ins, o); }, "gather", st);
  }

  WorkPtr scatter(const at::Tensor& in, at::Tensor& out, int root) override {
    if (out.numel() == 0) return std::make_unique<CompletedWork>();
    Staging st(staging_for(Collective::kScatter, out));
    std::vector<std::vector<at::Tensor>> ins;
    if (s_.rank == root) {
      ins.emplace_back();
      const int64_t n = out.numel();
      auto flat_in = st.input(in).view({-1});
      for (int r = 0; r < s_.size; ++r) ins[0].push_back(flat_in.narrow(0, r * n, n));
    }
    std::vector<at::Tensor> outs{st.output(out)};
    c10d::ScatterOptions o;
    o.rootRank = root;
    o.timeout = s_.timeout;
    return wrap([&] { return s_.backend->scatter(outs, ins, o); }, "scatter", st);
  }

  void barrier() override {
    c10d::BarrierOptions o;
    o.timeout = s_.timeout;
    wrap([&] { return s_.backend->barrier(o); }, "barrier", Staging(std::nullopt))->wait(s_.timeout);
  }

  c10::intrusive_ptr<c10d::ProcessGroup> c10d_group() const override {
    if (!group_ && s_.make_group) group_ = s_.make_group();
    return group_;
  }

 private:
  // Tensors a backend cannot take are copied to a device it can (see
  // C10dBackendSpec::staging and host_only): inputs copied there, outputs
  // received there and copied back once the collective has finished.
  // Without a target, the tensors as given.
  struct Staging {
    explicit Staging(std::optional<c10::Device> target) : to(std::move(target)) {}
    std::optional<c10::Device> to;
    std::vector<std::pair<at::Tensor, at::Tensor>> back;  // (caller's, staged)
    bool needed(const at::Tensor& t) const { return to && t.device() != *to; }
    at::Tensor input(const at::Tensor& t) const { return needed(t) ? t.to(*to) : t; }
    at::Tensor output(const at::Tensor& t) {
      if (!needed(t)) return t;
      auto staged = at::empty_like(t, t.options().device(*to));
      back.emplace_back(t, staged);
      return staged;
    }
    at::Tensor inout(const at::Tensor& t) {
      if (!needed(t)) return t;
      auto staged = t.to(*to);
      back.emplace_back(t, staged);
      return staged;
    }
  };

  std::optional<c10::Device> staging_for(Collective c, const at::Tensor& t) const {
    if (s_.staging) return s_.staging;
    if (!t.is_cpu() && s_.host_only.count(c) != 0) return c10::Device(c10::DeviceType::CPU);
    return std::nullopt;
  }

  bool flat(Collective c, const at::Tensor& t) const {
    return s_.flat.count(c) != 0 && (!s_.flat_host_only || t.is_cpu());
  }

  static bool equal_parts(const std::vector<std::int64_t>& counts) {
    return std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) == counts.end();
  }

  // Views of `t`'s consecutive parts of counts[r] elements.
  static std::vector<at::Tensor> parts_of(const at::Tensor& t, const std::vector<std::int64_t>& counts) {
    std::vector<at::Tensor> parts;
    auto flat_t = t.view({-1});
    std::int64_t at = 0;
    for (const auto c : counts) {
      parts.push_back(flat_t.narrow(0, at, c));
      at += c;
    }
    return parts;
  }

  static void copy_if_needed(const at::Tensor& in, at::Tensor& out) {
    if (!in.is_same(out)) out.copy_(in);
  }

  template <typename Fn>
  WorkPtr wrap(Fn&& start, const std::string& what, const Staging& staging) {
    const std::string context = s_.name + " " + what;
    std::function<void()> post = s_.after_wait;
    if (!staging.back.empty())
      post = [after = s_.after_wait, back = staging.back]() mutable {
        if (after) after();
        for (auto& [mine, staged] : back) mine.copy_(staged);
      };
    try {
      auto store = s_.store;
      return wrap_c10d_work(
          start(), context,
          [store]() { return failure_cause(store, std::chrono::milliseconds(2000)); },
          std::move(post), failed_, s_.poll_completion, s_.capturing);
    } catch (...) {
      failed_->store(true);
      std::rethrow_exception(translate(std::current_exception(), context));
    }
  }

  C10dBackendSpec s_;
  std::shared_ptr<std::atomic<bool>> failed_ = std::make_shared<std::atomic<bool>>(false);
  mutable c10::intrusive_ptr<c10d::ProcessGroup> group_;
};

}  // namespace

C10dRendezvous c10d_rendezvous(const std::string& name, const launch::World& world,
                               const CommOptions& opts, const Group& group) {
  C10dRendezvous r;
  r.spec.name = name;
  r.spec.rank = group.store ? group.rank : world.rank;
  r.spec.size = group.store ? group.size : world.world_size;
  r.spec.timeout = opts.timeout;
  r.spec.store = group.store ? group.store : connect_store(world, opts.timeout);
  r.prefix = c10::make_intrusive<c10d::PrefixStore>(
      group.store ? group.prefix + "/" + name : "dtbench/" + name, r.spec.store);
  return r;
}

std::unique_ptr<Communicator> make_c10d_communicator(C10dBackendSpec spec) {
  return std::make_unique<C10dCommunicator>(std::move(spec));
}

}  // namespace dtbench::comm
