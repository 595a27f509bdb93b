#pragma once
// The kvstore worker of --device cuda: the `local` and `device` modes with
// the replicas as tensors on one device (the GPU of the worker's LOCAL_RANK;
// MXNet spreads them over several GPUs, dtbench gives each rank one).
//   local   every replica copied to host memory, summed there, copied back
//   device  replicas summed on the device, allreduced across workers by the
//           communicator (per array, like KvWorker), copied to each replica
// Same data, rounds, byte counts and exact check as KvWorker (kv_worker.h).
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "bench/kvstore/kv_config.h"
#include "report/kvstore_record.h"

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::bench::kv {

class KvTensorWorker {
 public:
  KvTensorWorker(const KvOptions& opts, const KvLayout& layout, int worker, const c10::Device& device);
  // device mode: the workers' communicator (on `device`'s tensors).
  void set_communicator(comm::Communicator* comm) { comm_ = comm; }
  // Called with the round's number after its untimed refill (the device
  // synchronised), before the timed part: as KvWorker::set_round_start.
  void set_round_start(std::function<void(std::int64_t round)> fn) { round_start_ = std::move(fn); }
  report::KvIteration run(std::int64_t round);

 private:
  void fill(std::int64_t round);
  KvErrors check(const KvExpected& want) const;

  KvOptions opts_;
  KvLayout layout_;
  int worker_;
  c10::Device device_;
  std::vector<at::Tensor> replicas_;
  comm::Communicator* comm_ = nullptr;
  std::function<void(std::int64_t)> round_start_;
};

}  // namespace dtbench::bench::kv
