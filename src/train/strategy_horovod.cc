// `horovod`: Horovod 0.28.1's tensor fusion, as its C++ core runs it under
// hvd.DistributedOptimizer (read from horovod/common/operations.cc,
// controller.cc, response_cache.cc, ops/gloo_operations.cc and
// torch/optimizer.py; written anew):
//  - a hook on each parameter's gradient accumulator enqueues the gradient
//    (cast to float16 first with --compression fp16, Horovod's
//    Compression.fp16) as soon as autograd produced it;
//  - a background thread wakes every cycle time, takes what was enqueued and
//    agrees with the other ranks which tensors every rank has ready
//    (horovod_controller.h: the response cache, the coordinator);
//  - the ready responses are fused in order up to the fusion threshold
//    (horovod_plan.h), and each fused group is copied into the fusion
//    buffer, allreduced (sum), scaled by 1 / size and copied out;
//  - the optimizer step waits until every gradient came back
//    (DistributedOptimizer.synchronize()).
// The background thread issues every collective while it lives, so the
// buffer broadcast before each forward is a request through the same
// negotiation (Horovod's broadcasts are ops of its queue too).
// Differences from Horovod: the cache bits travel as int32 0/1 ANDed by a
// MIN allreduce (Horovod ANDs packed 64-bit words), the coordinator's gather
// is an allgather, and cache invalidation (a tensor changing shape or dtype)
// cannot happen here (the model's tensors are fixed), so it is not written.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <torch/csrc/autograd/function.h>
#include <torch/torch.h>

#include "core/error.h"
#include "train/horovod_controller.h"
#include "train/horovod_plan.h"
#include "train/replicas.h"
#include "train/strategies.h"
#include "train/wire_cast.h"

namespace dtbench::train {
namespace {

namespace hvd = horovod;
using Clock = std::chrono::steady_clock;

int local_world_size() {
  const char* v = std::getenv("LOCAL_WORLD_SIZE");
  const int n = v ? std::atoi(v) : 1;
  return n > 0 ? n : 1;
}

class HorovodStrategy : public Strategy {
 public:
  HorovodStrategy(const TrainOptions& given, torch::nn::Module& module, comm::Communicator& comm,
                  trace::TrainObserver& observer)
      : HorovodStrategy(resolved(given), module, comm, observer, 0) {}

  HorovodStrategy(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
                  trace::TrainObserver& observer, int)
      : Strategy(module.parameters()),
        comm_(comm),
        observer_(observer),
        buffers_(module.buffers()),
        broadcast_buffers_(opts.broadcast_buffers && !module.buffers().empty()),
        fp16_(opts.compression == "fp16"),
        threshold_(hvd::fusion_threshold_bytes(
            static_cast<std::int64_t>(opts.fusion_threshold_mb * 1024 * 1024), local_world_size())),
        cycle_(std::chrono::duration<double, std::milli>(opts.cycle_time_ms)),
        controller_(comm, threshold_, params_.size()) {
    sync_initial_state(comm_, params_, buffers_);
    const std::size_t n = params_.size();
    broadcast_tensor_ = n;  // the buffer broadcast's request
    wire_.resize(n);
    bytes_of_.resize(n + 1, 0);
    dtype_of_.resize(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      bytes_of_[i] = params_[i].numel() * (fp16_ ? 2 : params_[i].element_size());
      dtype_of_[i] = fp16_ ? static_cast<int>(torch::kHalf) : static_cast<int>(params_[i].scalar_type());
    }
    controller_.describe(bytes_of_, dtype_of_);
    if (fp16_) stats_.dtype = "fp16";
    submitted_.assign(n + 1, false);
    enqueued_at_.assign(n + 1, 0.0);
    accumulators_ = hook_gradient_accumulators(params_, [this](std::size_t i) { gradient_ready(i); });
    thread_ = std::thread([this] { loop(); });
  }

  ~HorovodStrategy() override {
    try {
      stop();
    } catch (...) {
      // The run already failed or finished; the error was reported there.
    }
  }

  std::string name() const override { return "horovod"; }

  void before_forward() override {
    if (!broadcast_buffers_) return;
    trace::PhaseScope scope(observer_, trace::Phase::kBroadcast);
    {
      std::lock_guard<std::mutex> lock(mu_);
      outstanding_ = 1;
      submitted_[broadcast_tensor_] = true;
      enqueue_locked(broadcast_tensor_);
    }
    wait_outstanding("the buffer broadcast");
  }

  void before_backward(const torch::Tensor&) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::fill(submitted_.begin(), submitted_.end(), false);
    outstanding_ = params_.size();
    group_ = 0;
    groups_.clear();
    armed_ = true;
  }

  void finish_backward() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      // synchronize(): a parameter whose gradient was not computed is
      // allreduced as zeros (another rank may have computed it).
      for (std::size_t i = 0; i < params_.size(); ++i) {
        if (submitted_[i]) continue;
        auto& p = params_[i];
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
        submit_locked(i);
      }
      armed_ = false;
    }
    wait_outstanding("the gradient allreduces");
    if (fp16_) {
      torch::NoGradGuard no_grad;
      for (std::size_t i = 0; i < params_.size(); ++i)
        params_[i].mutable_grad().copy_(wire_[i]);  // decompress
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!probe_) last_groups_ = groups_;  // the probe's reductions may change a cycle's fusion
  }

  void finish() override { stop(); }
  // After stop(): the background loop no longer runs, so directly.
  bool sync_buffers() override {
    if (!broadcast_buffers_) return false;
    broadcast_buffers(comm_, buffers_);
    return true;
  }

  // fp16: while on, the loop also reduces each fused group's float32
  // gradients and compares the averages (every rank probes the same
  // iteration, so every rank issues the same extra collectives).
  void set_compression_probe(bool on) override { probe_ = on && fp16_; }

  CompressionStats compression_stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  std::vector<std::vector<size_t>> buckets() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return last_groups_;
  }

 private:
  static TrainOptions resolved(TrainOptions o) {
    resolve_horovod(o);  // HOROVOD_FUSION_THRESHOLD / HOROVOD_CYCLE_TIME, else Horovod's defaults
    return o;
  }

  // Autograd's hook: the gradient is produced.
  void gradient_ready(std::size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!armed_ || submitted_[i]) return;
    submit_locked(i);
  }

  void submit_locked(std::size_t i) {
    torch::NoGradGuard no_grad;
    const auto& g = params_[i].grad();
    if (!g.defined())
      throw CommError(fmt::format("horovod: parameter {} has no gradient after backward", i));
    wire_[i] = fp16_ ? g.to(torch::kHalf) : g;  // compress (Horovod's Compression.fp16)
    submitted_[i] = true;
    enqueue_locked(i);
  }

  void enqueue_locked(std::size_t i) {
    enqueued_at_[i] = trace::clock_us();
    queue_.push_back({i, bytes_of_[i], dtype_of_[i],
                      i == broadcast_tensor_ ? hvd::OpType::kBroadcast : hvd::OpType::kAllreduce});
  }

  // Waits for the background thread to answer, polling as finish_work does.
  // Its collectives are bounded by --timeout and fail naming the peer (and
  // the cause a launcher published), so this wait only bounds a loop that
  // stopped answering: twice as long.
  void wait_outstanding(const char* what) {
    std::unique_lock<std::mutex> lock(mu_);
    const auto bound = 2 * comm_.timeout() + std::chrono::seconds(1);
    const auto pred = [this] { return outstanding_ == 0 || error_ || stopped_; };
    const auto deadline = Clock::now() + bound;
    bool ok;
    while (!(ok = pred()) && Clock::now() < deadline) {
      lock.unlock();
      std::this_thread::yield();  // poll (see finish_work)
      lock.lock();
    }
    if (error_) std::rethrow_exception(error_);
    if (stopped_ && outstanding_ > 0)
      throw CommError(fmt::format("horovod: the background loop stopped before {} completed", what));
    if (!ok)
      throw TimeoutError(fmt::format(
          "horovod: {} did not complete within {} ms ({} tensor(s) not agreed by every rank)", what,
          std::chrono::duration_cast<std::chrono::milliseconds>(bound).count(), outstanding_));
  }

  void stop() {
    if (!thread_.joinable()) return;
    shut_down_ = true;
    thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    if (error_) std::rethrow_exception(error_);
  }

  // The background thread (Horovod's BackgroundThreadLoop / RunLoopOnce).
  void loop() {
    auto last = Clock::now();
    try {
      for (;;) {
        const auto wake = last + std::chrono::duration_cast<Clock::duration>(cycle_);
        if (wake > Clock::now()) std::this_thread::sleep_until(wake);
        last = Clock::now();
        std::deque<hvd::Request> messages, retry;
        {
          std::lock_guard<std::mutex> lock(mu_);
          messages.swap(queue_);
        }
        bool agreed_shut_down = shut_down_;
        auto responses = controller_.compute_responses(std::move(messages), retry, agreed_shut_down);
        if (!retry.empty()) {
          std::lock_guard<std::mutex> lock(mu_);
          queue_.insert(queue_.end(), retry.begin(), retry.end());
        }
        const double agreed_at = trace::clock_us();
        for (const auto& r : responses) perform(r, agreed_at);
        if (agreed_shut_down) break;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }

  // Horovod's PerformOperation for one (fused) response.
  void perform(const hvd::Response& r, double agreed_at) {
    torch::NoGradGuard no_grad;
    if (r.type == hvd::OpType::kBroadcast) {
      broadcast_buffers(comm_, buffers_);
      complete(r);
      return;
    }
    int group;
    double first_enqueued;
    {
      std::lock_guard<std::mutex> lock(mu_);
      group = group_++;
      groups_.push_back(r.tensors);
      first_enqueued = agreed_at;
      for (auto t : r.tensors) first_enqueued = std::min(first_enqueued, enqueued_at_[t]);
    }
    observer_.stage(group, trace::Stage::kNegotiate, first_enqueued, agreed_at);
    const auto& first = wire_[r.tensors.front()];
    torch::Tensor buffer;
    if (r.tensors.size() == 1) {
      buffer = first.view({-1});  // in place, as Horovod's single-entry path
    } else {
      const double t0 = trace::clock_us();
      buffer = fusion_buffer(first).narrow(0, 0, r.bytes / first.element_size());
      int64_t offset = 0;
      for (auto t : r.tensors) {
        buffer.narrow(0, offset, wire_[t].numel()).copy_(wire_[t].reshape({-1}));
        offset += wire_[t].numel();
      }
      observer_.stage(group, trace::Stage::kMemcpyIn, t0, trace::clock_us());
    }
    observer_.collective_launch(group, r.bytes, wire_dtype_of(first), r.tensors);
    hvd::finish_work(comm_, comm_.allreduce(buffer, buffer, comm::ReduceOp::kSum));
    observer_.collective_done(group);
    buffer.mul_(1.0 / comm_.size());  // postscale: Average
    if (probe_) record_probe(r, buffer);
    if (r.tensors.size() > 1) {
      const double t0 = trace::clock_us();
      int64_t offset = 0;
      for (auto t : r.tensors) {
        wire_[t].view({-1}).copy_(buffer.narrow(0, offset, wire_[t].numel()));
        offset += wire_[t].numel();
      }
      observer_.stage(group, trace::Stage::kMemcpyOut, t0, trace::clock_us());
    }
    complete(r);
  }

  // The compression probe: the group's float32 gradients (untouched until
  // finish_backward decompresses into them) averaged beside `averaged`.
  void record_probe(const hvd::Response& r, const torch::Tensor& averaged) {
    std::vector<torch::Tensor> grads;
    for (auto t : r.tensors) grads.push_back(params_[t].grad().reshape({-1}));
    auto exact = torch::cat(grads);
    hvd::finish_work(comm_, comm_.allreduce(exact, exact, comm::ReduceOp::kSum));
    exact.div_(static_cast<double>(comm_.size()));
    std::lock_guard<std::mutex> lock(mu_);
    add_compression_error(stats_, averaged.narrow(0, 0, exact.numel()), exact);
  }

  // The fusion buffer of `like`'s dtype and device: the threshold's bytes,
  // allocated on first use and kept (Horovod's FusionBufferManager).
  torch::Tensor& fusion_buffer(const torch::Tensor& like) {
    auto& b = like.scalar_type() == torch::kHalf ? fusion_half_ : fusion_float_;
    if (!b.defined()) b = torch::empty({threshold_ / like.element_size()}, like.options());
    return b;
  }

  void complete(const hvd::Response& r) {
    std::lock_guard<std::mutex> lock(mu_);
    outstanding_ -= std::min(outstanding_, r.tensors.size());
  }

  comm::Communicator& comm_;
  trace::TrainObserver& observer_;
  std::vector<torch::Tensor> buffers_;
  const bool broadcast_buffers_;
  const bool fp16_;
  const std::int64_t threshold_;
  const std::chrono::duration<double, std::milli> cycle_;
  std::size_t broadcast_tensor_ = 0;
  std::vector<std::int64_t> bytes_of_;
  std::vector<int> dtype_of_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  // The background thread's own state.
  hvd::Controller controller_;
  torch::Tensor fusion_float_, fusion_half_;
  // Shared with the training thread, under mu_.
  mutable std::mutex mu_;
  std::deque<hvd::Request> queue_;
  std::vector<torch::Tensor> wire_;
  std::vector<bool> submitted_;
  std::vector<double> enqueued_at_;
  std::size_t outstanding_ = 0;
  bool armed_ = false;
  int group_ = 0;
  std::vector<std::vector<size_t>> groups_, last_groups_;
  std::exception_ptr error_;
  bool stopped_ = false;
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> probe_{false};
  CompressionStats stats_;  // under mu_
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Strategy> make_horovod_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                                comm::Communicator& comm,
                                                trace::TrainObserver& observer) {
  return std::make_unique<HorovodStrategy>(opts, module, comm, observer);
}

}  // namespace dtbench::train
