#include "bench/comm/compute_load.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "bench/comm/clock_sync.h"
#include "comm/communicator.h"
#include "core/error.h"
#include "device/device.h"

namespace dtbench::bench {

ComputeLoad::ComputeLoad(std::int64_t n, const c10::Device& device) : n_(n), device_(device) {}

ComputeLoad::~ComputeLoad() {
  if (thread_.joinable()) stop();
}

void ComputeLoad::start() {
  stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    log_.clear();
  }
  stop_ = false;
  thread_ = std::thread([this] { loop(); });
}

std::vector<GemmSpan> ComputeLoad::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (error_) {
    auto e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
  return log_;
}

void ComputeLoad::loop() {
  try {
    // On a GPU the products go to a stream of their own: on the stream the
    // collectives' thread waits on, each wait would include them.
    const auto stream = device::use_own_stream(device_);
    const auto options = at::TensorOptions().dtype(at::kFloat).device(device_);
    const at::Tensor a = at::ones({n_, n_}, options);
    const at::Tensor b = at::ones({n_, n_}, options);
    at::Tensor c = at::empty({n_, n_}, options);
    while (!stop_) {
      const double s = steady_now_us();
      at::mm_out(c, a, b);
      device::synchronize(device_);
      const double e = steady_now_us();
      std::lock_guard<std::mutex> lock(mu_);
      log_.push_back({s, e});
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::current_exception();
  }
}

std::vector<GemmSpan> ComputeLoad::run_alone(double us, int min_products) {
  start();
  const double t0 = steady_now_us();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::size_t done = 0;
    bool failed = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done = log_.size();
      failed = error_ != nullptr;
    }
    if (failed || (steady_now_us() - t0 >= us && done >= static_cast<std::size_t>(min_products))) break;
  }
  return stop();
}

double median_product_us(const std::vector<GemmSpan>& spans, double from_us, double to_us, int* count) {
  std::vector<double> d;
  for (const auto& s : spans) {
    const double mid = (s.start_us + s.end_us) / 2;
    if (mid >= from_us && mid <= to_us) d.push_back(s.end_us - s.start_us);
  }
  if (count != nullptr) *count = static_cast<int>(d.size());
  if (d.empty()) return 0;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

int iterations_beside(int iters, double coll_us, double product_us) {
  if (coll_us <= 0 || product_us <= 0) return iters;
  constexpr double kProducts = 4, kMaxUs = 5e6, kMaxIters = 20000;
  const double want = std::ceil(kProducts * product_us / coll_us);
  const double cap = std::max(static_cast<double>(iters), std::min(kMaxIters, std::floor(kMaxUs / coll_us)));
  return static_cast<int>(std::clamp(want, static_cast<double>(iters), cap));
}

// --with-compute: sizes the second run from a few products alone (every
// rank's slowest, and each group's time alone), times the placement again
// (`again`, which reports its timed window) with the GEMM thread running,
// then the GEMMs alone for as long; fills each group's CommWithCompute in
// `alone`.
void with_compute(ComputeLoad& load, std::vector<report::CommTiming>& alone,
                  const std::function<std::vector<report::CommTiming>(int, std::pair<double, double>*)>& again,
                  comm::Communicator& world, const std::vector<std::vector<int>>& groups, int iters, int agg) {
  // Every rank must run the same number of iterations: the longest product
  // of any rank against the shortest iteration of any group decides (a
  // row's time is per operation: an iteration issues `agg` of them).
  double sizing_us = 0;
  try {
    sizing_us = median_product_us(load.run_alone(0, 3), 0, 1e300);
  } catch (...) {
    sizing_us = 0;  // the GEMM thread fails again below, where every rank learns of it together
  }
  at::Tensor longest = at::full({1}, sizing_us, at::kDouble);
  world.allreduce(longest, longest, comm::ReduceOp::kMax)->wait(world.timeout());
  double shortest_coll = 0;
  for (std::size_t g = 0; g < groups.size() && g < alone.size(); ++g)
    if (alone[g].time_us > 0 && (shortest_coll == 0 || alone[g].time_us < shortest_coll))
      shortest_coll = alone[g].time_us;
  const int n = iterations_beside(iters, shortest_coll * std::max(agg, 1), longest.item<double>());

  load.start();
  std::pair<double, double> window{0, 0};
  std::vector<report::CommTiming> with;
  try {
    with = again(n, &window);
  } catch (...) {
    load.stop();
    throw;
  }
  // A failed GEMM thread (a product too large for the device, ...) fails
  // every rank together, after the gather, or the others would wait in it.
  std::string failed;
  double during_us = 0, alone_us = 0;
  int n_during = 0;
  try {
    const auto during = load.stop();
    during_us = median_product_us(during, window.first, window.second, &n_during);
    const auto solo = load.run_alone(window.second - window.first, 3);
    alone_us = median_product_us(solo, 0, 1e300);
  } catch (const std::exception& e) {
    failed = e.what();
  }
  std::vector<double> mine{during_us, alone_us, static_cast<double>(n_during), failed.empty() ? 0.0 : 1.0};
  constexpr int kEach = 4;
  at::Tensor local = at::from_blob(mine.data(), {kEach}, at::kDouble).clone();
  at::Tensor all = at::zeros({kEach * world.size()}, at::kDouble);
  world.allgather(local, all)->wait(world.timeout());
  const auto* p = all.data_ptr<double>();
  for (int r = 0; r < world.size(); ++r)
    if (p[kEach * r + 3] != 0)
      throw UsageError(failed.empty()
                           ? fmt::format("--with-compute: rank {}'s GEMM thread failed (its own line says why)", r)
                           : fmt::format("--with-compute: the GEMM thread failed: {}", failed));
  for (std::size_t g = 0; g < groups.size() && g < alone.size() && g < with.size(); ++g) {
    std::vector<double> d, a;
    int fewest = -1;
    for (const int r : groups[g]) {
      if (p[kEach * r] > 0) d.push_back(p[kEach * r]);
      a.push_back(p[kEach * r + 1]);
      const int n = static_cast<int>(p[kEach * r + 2]);
      fewest = fewest < 0 ? n : std::min(fewest, n);
    }
    auto median = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
      return v[v.size() / 2];
    };
    auto& w = alone[g].with_compute;
    w.ran = true;
    w.iters = n;
    w.time_us = with[g].time_us;
    w.slowdown = alone[g].time_us > 0 ? with[g].time_us / alone[g].time_us : 0;
    w.gemm_us_during = median(d);
    w.gemm_us_alone = median(a);
    w.gemm_slowdown = w.gemm_us_alone > 0 && w.gemm_us_during > 0 ? w.gemm_us_during / w.gemm_us_alone : 0;
    w.gemms_during = std::max(fewest, 0);
    if (alone[g].wrong >= 0 && with[g].wrong > 0) alone[g].wrong += with[g].wrong;  // the second run's check counts too
  }
}

}  // namespace dtbench::bench
