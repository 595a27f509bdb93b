#include "bench/comm/compute_load.h"

#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>

#include "bench/comm/clock_sync.h"
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

}  // namespace dtbench::bench
