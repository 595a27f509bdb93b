// `horovod`: Horovod 0.28.1's tensor fusion, as its C++ core runs it under
// hvd.DistributedOptimizer (read from horovod/common/operations.cc,
// controller.cc, response_cache.cc, ops/gloo_operations.cc and
// torch/optimizer.py; written anew):
//  - a hook on each parameter's gradient accumulator enqueues the gradient
//    (cast to float16 first with --compression fp16, Horovod's
//    Compression.fp16) as soon as autograd produced it;
//  - a background thread wakes every cycle time, takes what was enqueued and
//    agrees with the other ranks which tensors every rank has ready: with
//    the response cache (tensors seen before have a bit each) one AND
//    across ranks of the ready bits; a request not in the cache goes to the
//    coordinator (rank 0: requests gathered, a message table counts them,
//    the fused response list is broadcast back);
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
        cache_(hvd::kDefaultCacheCapacity),
        table_(comm.size()) {
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

  // Waits for one of the loop's collectives by polling it, giving the CPU
  // away between polls, rather than sleeping on the work's condition
  // variable: a rank whose threads all sleep lets its idle vCPU halt, and
  // every wake-up then pays the host's reschedule (docs/PERFORMANCE.md "Training: ranks bound to cores"). Horovod's
  // threads poll too (its synchronize() loops on PollHandle; its gloo
  // collectives run on the background thread itself, with no hand-off to a
  // worker thread): on this VM blocking waits made this loop 2x slower than
  // Horovod's on a small model (docs/PERFORMANCE.md "Horovod"). A poll that
  // finds another thread runnable hands it the core (sched_yield), so
  // backward's compute on the same core is not held up.
  void finish_work(comm::WorkPtr w) {
    const auto deadline = Clock::now() + comm_.timeout();
    while (!w->done() && Clock::now() < deadline) std::this_thread::yield();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    w->wait(std::max(left, std::chrono::milliseconds(1)));  // rethrows a failure; past the deadline, times out
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
        bool agreed_shut_down = false;
        auto responses = compute_responses(agreed_shut_down);
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

  // Horovod's Controller::ComputeResponseList.
  std::vector<hvd::Response> compute_responses(bool& shut_down) {
    std::deque<hvd::Request> messages;
    {
      std::lock_guard<std::mutex> lock(mu_);
      messages.swap(queue_);
    }
    const bool cache_on = cache_.capacity() > 0;
    std::vector<std::uint32_t> hits;
    bool uncached = false;
    for (const auto& m : messages) {
      if (cache_on && cache_.cached(m.tensor))
        hits.push_back(cache_.bit(m.tensor));
      else
        uncached = true;
    }
    shut_down = shut_down_;
    std::set<std::uint32_t> common;
    if (cache_on) {
      auto bits = hvd::encode_cache_bits(hits, shut_down, uncached, cache_.num_active_bits());
      auto t = torch::from_blob(bits.data(), {static_cast<int64_t>(bits.size())}, torch::kInt32).clone();
      finish_work(comm_.allreduce(t, t, comm::ReduceOp::kMin));
      std::vector<std::int32_t> anded(t.data_ptr<std::int32_t>(), t.data_ptr<std::int32_t>() + t.numel());
      const auto agreement = hvd::decode_cache_bits(anded);
      common.insert(agreement.hits.begin(), agreement.hits.end());
      shut_down = agreement.shut_down;
      uncached = agreement.uncached;
      // Cached requests not ready everywhere wait for the next cycle; the
      // common ones are answered from the cache below.
      std::deque<hvd::Request> rest, retry;
      for (auto& m : messages) {
        if (!cache_.cached(m.tensor))
          rest.push_back(m);
        else if (!common.count(cache_.bit(m.tensor)))
          retry.push_back(m);
      }
      messages.swap(rest);
      if (!retry.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        queue_.insert(queue_.end(), retry.begin(), retry.end());
      }
      if (!uncached) {
        std::deque<hvd::Response> rs;
        for (auto bit : common) rs.push_back(cache_.get(bit));
        return hvd::fuse(std::move(rs), threshold_);
      }
    }
    auto list = coordinate(messages, common, shut_down);
    if (cache_on)
      for (const auto& r : list)
        if (r.type == hvd::OpType::kAllreduce) cache_.put(r, bytes_of_);
    return list;
  }

  // The coordinator path: every rank's new requests to rank 0, which counts
  // them in its message table and broadcasts the fused response list.
  std::vector<hvd::Response> coordinate(const std::deque<hvd::Request>& messages,
                                        const std::set<std::uint32_t>& common, bool& shut_down) {
    const int size = comm_.size();
    const auto width = static_cast<int64_t>(2 + params_.size() + 1);
    auto mine = torch::zeros({width}, torch::kInt64);
    auto* m = mine.data_ptr<int64_t>();
    m[0] = shut_down ? 1 : 0;
    m[1] = static_cast<int64_t>(messages.size());
    for (std::size_t k = 0; k < messages.size(); ++k) m[2 + k] = static_cast<int64_t>(messages[k].tensor);
    auto all = torch::empty({width * size}, torch::kInt64);
    finish_work(comm_.allgather(mine, all));
    auto list = torch::zeros({static_cast<int64_t>(hvd::max_encoded_responses(params_.size() + 1))},
                             torch::kInt64);
    if (comm_.rank() == 0) {
      std::deque<hvd::Response> rs;
      for (auto bit : common) rs.push_back(cache_.peek(bit));
      const auto* a = all.data_ptr<int64_t>();
      for (int r = 0; r < size; ++r) {
        const auto* row = a + r * width;
        shut_down = shut_down || row[0] != 0;
        for (int64_t k = 0; k < row[1]; ++k) {
          const auto t = static_cast<std::size_t>(row[2 + k]);
          if (table_.add(t))
            rs.push_back({t == broadcast_tensor_ ? hvd::OpType::kBroadcast : hvd::OpType::kAllreduce,
                          dtype_of_[t], {t}, bytes_of_[t]});
        }
      }
      const auto encoded = hvd::encode_responses(hvd::fuse(std::move(rs), threshold_), shut_down);
      std::copy(encoded.begin(), encoded.end(), list.data_ptr<int64_t>());
    }
    finish_work(comm_.broadcast(list, list, 0));
    return hvd::decode_responses(list.data_ptr<int64_t>(), static_cast<std::size_t>(list.numel()),
                                 shut_down, bytes_of_);
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
    finish_work(comm_.allreduce(buffer, buffer, comm::ReduceOp::kSum));
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
    finish_work(comm_.allreduce(exact, exact, comm::ReduceOp::kSum));
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
  hvd::ResponseCache cache_;
  hvd::MessageTable table_;
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
