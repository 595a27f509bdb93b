#include "bench/kvstore/kv_tensor_worker.h"

#include <chrono>

#include <ATen/ATen.h>

#include "comm/communicator.h"
#include "core/error.h"
#include "device/device.h"

namespace dtbench::bench::kv {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

KvTensorWorker::KvTensorWorker(const KvOptions& opts, const KvLayout& layout, int worker,
                               const c10::Device& device)
    : opts_(opts), layout_(layout), worker_(worker), device_(device) {
  DTBENCH_CHECK(!is_dist(opts_.mode), "KvTensorWorker runs local and device modes only");
  const auto n = static_cast<std::int64_t>(layout_.total_numel);
  for (int r = 0; r < opts_.replicas; ++r)
    replicas_.push_back(at::empty({n}, at::TensorOptions().dtype(at::kFloat).device(device_)));
}

void KvTensorWorker::fill(std::int64_t round) {
  const std::size_t n = layout_.total_numel;
  std::vector<float> host(n);
  for (int r = 0; r < opts_.replicas; ++r) {
    for (std::size_t j = 0; j < n; ++j) host[j] = push_value(worker_, r, round, j);
    replicas_[r].copy_(at::from_blob(host.data(), {static_cast<std::int64_t>(n)}, at::kFloat));
  }
  device::synchronize(device_);
}

// Every replica against the exact values (kv_worker.cc's check).
KvErrors KvTensorWorker::check(const KvExpected& want) const {
  const std::size_t n = layout_.total_numel;
  std::vector<float> host(n);
  for (std::size_t j = 0; j < n; ++j) host[j] = want.at(j);
  const auto expected = at::from_blob(host.data(), {static_cast<std::int64_t>(n)}, at::kFloat).to(device_, at::kDouble);
  KvErrors e;
  e.want_sum = expected.abs().sum().item<double>();
  for (const auto& rep : replicas_) {
    const auto d = (rep.to(at::kDouble) - expected).abs();
    e.abs_sum += d.sum().item<double>();
    e.max_abs = std::max(e.max_abs, d.max().item<double>());
  }
  return e;
}

report::KvIteration KvTensorWorker::run(std::int64_t round) {
  fill(round);  // ends with the device synchronised
  if (round_start_) round_start_(round);
  report::KvIteration it;
  const auto t0 = Clock::now();
  if (opts_.mode == KvMode::kLocal) {
    // MXNet's `local` kvstore: the reduction happens in host memory.
    auto host = replicas_[0].to(at::kCPU);
    for (int r = 1; r < opts_.replicas; ++r) host.add_(replicas_[r].to(at::kCPU));
    for (auto& rep : replicas_) rep.copy_(host);
  } else {
    for (int r = 1; r < opts_.replicas; ++r) replicas_[0].add_(replicas_[r]);
    if (comm_ != nullptr) {
      std::vector<comm::WorkPtr> works;
      for (std::size_t a = 0; a < layout_.arrays.size(); ++a) {
        auto view = replicas_[0].narrow(0, static_cast<std::int64_t>(layout_.array_offset[a]),
                                        static_cast<std::int64_t>(layout_.arrays[a].numel));
        works.push_back(comm_->allreduce(view, view, comm::ReduceOp::kSum));
      }
      for (auto& w : works) w->wait(comm_->timeout());
    }
    for (int r = 1; r < opts_.replicas; ++r) replicas_[r].copy_(replicas_[0]);
  }
  device::synchronize(device_);
  it.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  it.gbps = bytes_per_worker(opts_, layout_.total_numel) / it.seconds / 1e9;
  it.gbps_per_gpu = measure_py_bytes(opts_, layout_.total_numel) / it.seconds / 1e9;
  if (opts_.check) {
    const auto e = check(expected_local(opts_, worker_, round));
    it.error = e.max_abs;
    it.rel_l1_error = e.rel_l1();
  }
  return it;
}

}  // namespace dtbench::bench::kv
