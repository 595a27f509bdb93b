#include "train/horovod_controller.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <torch/torch.h>

namespace dtbench::train::horovod {

using Clock = std::chrono::steady_clock;

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
void finish_work(comm::Communicator& comm, comm::WorkPtr w) {
  const auto deadline = Clock::now() + comm.timeout();
  while (!w->done() && Clock::now() < deadline) std::this_thread::yield();
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  w->wait(std::max(left, std::chrono::milliseconds(1)));  // rethrows a failure; past the deadline, times out
}

Controller::Controller(comm::Communicator& comm, std::int64_t threshold, std::size_t tensors)
    : comm_(comm),
      threshold_(threshold),
      tensors_(tensors),
      broadcast_tensor_(tensors),
      bytes_of_(tensors + 1, 0),
      dtype_of_(tensors + 1, 0),
      cache_(kDefaultCacheCapacity),
      table_(comm.size()) {}

void Controller::describe(std::vector<std::int64_t> bytes_of, std::vector<int> dtype_of) {
  bytes_of_ = std::move(bytes_of);
  dtype_of_ = std::move(dtype_of);
}

// Horovod's Controller::ComputeResponseList.
std::vector<Response> Controller::compute_responses(std::deque<Request> messages, std::deque<Request>& retry,
                                                  bool& shut_down) {
  const bool cache_on = cache_.capacity() > 0;
  std::vector<std::uint32_t> hits;
  bool uncached = false;
  for (const auto& m : messages) {
    if (cache_on && cache_.cached(m.tensor))
      hits.push_back(cache_.bit(m.tensor));
    else
      uncached = true;
  }
  std::set<std::uint32_t> common;
  if (cache_on) {
    auto bits = encode_cache_bits(hits, shut_down, uncached, cache_.num_active_bits());
    auto t = torch::from_blob(bits.data(), {static_cast<int64_t>(bits.size())}, torch::kInt32).clone();
    finish_work(comm_, comm_.allreduce(t, t, comm::ReduceOp::kMin));
    std::vector<std::int32_t> anded(t.data_ptr<std::int32_t>(), t.data_ptr<std::int32_t>() + t.numel());
    const auto agreement = decode_cache_bits(anded);
    common.insert(agreement.hits.begin(), agreement.hits.end());
    shut_down = agreement.shut_down;
    uncached = agreement.uncached;
    // Cached requests not ready everywhere wait for the next cycle; the
    // common ones are answered from the cache below.
    std::deque<Request> rest;
    for (auto& m : messages) {
      if (!cache_.cached(m.tensor))
        rest.push_back(m);
      else if (!common.count(cache_.bit(m.tensor)))
        retry.push_back(m);
    }
    messages.swap(rest);
    if (!uncached) {
      std::deque<Response> rs;
      for (auto bit : common) rs.push_back(cache_.get(bit));
      return fuse(std::move(rs), threshold_);
    }
  }
  auto list = coordinate(messages, common, shut_down);
  if (cache_on)
    for (const auto& r : list)
      if (r.type == OpType::kAllreduce) cache_.put(r, bytes_of_);
  return list;
}

// The coordinator path: every rank's new requests to rank 0, which counts
// them in its message table and broadcasts the fused response list.
std::vector<Response> Controller::coordinate(const std::deque<Request>& messages,
                                          const std::set<std::uint32_t>& common, bool& shut_down) {
  const int size = comm_.size();
  const auto width = static_cast<int64_t>(2 + tensors_ + 1);
  auto mine = torch::zeros({width}, torch::kInt64);
  auto* m = mine.data_ptr<int64_t>();
  m[0] = shut_down ? 1 : 0;
  m[1] = static_cast<int64_t>(messages.size());
  for (std::size_t k = 0; k < messages.size(); ++k) m[2 + k] = static_cast<int64_t>(messages[k].tensor);
  auto all = torch::empty({width * size}, torch::kInt64);
  finish_work(comm_, comm_.allgather(mine, all));
  auto list = torch::zeros({static_cast<int64_t>(max_encoded_responses(tensors_ + 1))},
                           torch::kInt64);
  if (comm_.rank() == 0) {
    std::deque<Response> rs;
    for (auto bit : common) rs.push_back(cache_.peek(bit));
    const auto* a = all.data_ptr<int64_t>();
    for (int r = 0; r < size; ++r) {
      const auto* row = a + r * width;
      shut_down = shut_down || row[0] != 0;
      for (int64_t k = 0; k < row[1]; ++k) {
        const auto t = static_cast<std::size_t>(row[2 + k]);
        if (table_.add(t))
          rs.push_back({t == broadcast_tensor_ ? OpType::kBroadcast : OpType::kAllreduce,
                        dtype_of_[t], {t}, bytes_of_[t]});
      }
    }
    const auto encoded = encode_responses(fuse(std::move(rs), threshold_), shut_down);
    std::copy(encoded.begin(), encoded.end(), list.data_ptr<int64_t>());
  }
  finish_work(comm_, comm_.broadcast(list, list, 0));
  return decode_responses(list.data_ptr<int64_t>(), static_cast<std::size_t>(list.numel()),
                               shut_down, bytes_of_);
}

}  // namespace dtbench::train::horovod
