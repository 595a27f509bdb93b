#pragma once
// Computation beside communication (`dtbench comm --with-compute gemm:N`):
// a thread of its own that multiplies N x N float32 matrices back to back on
// the rank's device, each product timed, while the collective runs — what
// DDP's overlap of the gradient allreduce with the backward pass costs each.
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <utility>
#include <mutex>
#include <thread>
#include <vector>

#include <c10/core/Device.h>

#include "report/comm_record.h"

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::bench {

// One product's start and end on the steady clock (clock_sync.h), us.
struct GemmSpan {
  double start_us = 0, end_us = 0;
};

class ComputeLoad {
 public:
  ComputeLoad(std::int64_t n, const c10::Device& device);
  ~ComputeLoad();
  ComputeLoad(const ComputeLoad&) = delete;
  ComputeLoad& operator=(const ComputeLoad&) = delete;

  // Starts the products (a fresh log) on a thread of their own, on the GPU
  // on a stream of their own; stop() ends them after the one in progress
  // and returns every product's span since start(), or rethrows what ended
  // the thread (a product that could not be allocated, ...).
  void start();
  std::vector<GemmSpan> stop();
  // Runs the products alone for at least `us` microseconds and at least
  // `min_products` of them; returns their spans.
  std::vector<GemmSpan> run_alone(double us, int min_products);

  double flops_per_product() const { return 2.0 * static_cast<double>(n_) * static_cast<double>(n_) * static_cast<double>(n_); }

 private:
  void loop();
  std::int64_t n_;
  c10::Device device_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<GemmSpan> log_;
  std::exception_ptr error_;
};

// The median duration (us) of the products whose midpoint falls within
// [from_us, to_us]; 0 when none does. `count` (if given) gets how many did.
double median_product_us(const std::vector<GemmSpan>& spans, double from_us, double to_us, int* count = nullptr);

// How many timed iterations the run beside the products gets: `iters`, or
// more where an iteration of `iter_us` is too short for about four products
// of `product_us` to end inside the timed window (one-rank or small
// collectives beside large GEMMs); at most 5 s of iterations and 20,000 of
// them (every rank's samples are gathered), never under `iters`.
int iterations_beside(int iters, double iter_us, double product_us);

// --with-compute for one placement of one size: times a few products alone
// to size the run (iterations_beside, the same count on every rank), runs
// `again` (the placement timed once more with that many iterations of `agg`
// operations each; it
// reports this rank's timed window) with the GEMM thread running, then the
// GEMMs alone for as long, gathers every rank's product times over `world`,
// and fills each group's CommWithCompute in `alone` (indexed as `groups`).
// Every rank calls it; a failed GEMM thread fails every rank together,
// after the gather.
void with_compute(ComputeLoad& load, std::vector<report::CommTiming>& alone,
                  const std::function<std::vector<report::CommTiming>(int, std::pair<double, double>*)>& again,
                  comm::Communicator& world, const std::vector<std::vector<int>>& groups, int iters, int agg);

}  // namespace dtbench::bench
