#pragma once
// Internal to train/: the constructors of each reducer and the steps they share.
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "train/grad_ready_probe.h"
#include "train/strategy.h"

namespace dtbench::train {

// PyTorch DDP's broadcast bucket for parameters and buffers (250 MiB).
constexpr std::size_t kBroadcastBytes = 250u << 20;

std::unique_ptr<Strategy> make_ddp_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                              comm::Communicator& comm, trace::TrainObserver& observer);
std::unique_ptr<Strategy> make_overlap_strategy(const TrainOptions& opts,
                                                  torch::nn::Module& module,
                                                  comm::Communicator& comm, trace::TrainObserver& observer);
// sync with DDP's buckets; allreduce-after-backward (per_tensor) with one
// bucket per parameter, i.e. one allreduce per gradient tensor.
std::unique_ptr<Strategy> make_sync_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                               comm::Communicator& comm, bool per_tensor,
                                               trace::TrainObserver& observer);

// ZeRO stage 1 and 2 (strategy_zero1.cc, strategy_zero2.cc): flat
// parameter buckets sharded over the ranks (shard_buckets.h).
std::unique_ptr<Strategy> make_zero1_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                              comm::Communicator& comm, trace::TrainObserver& observer);
std::unique_ptr<Strategy> make_zero2_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                              comm::Communicator& comm, trace::TrainObserver& observer);

// ZeRO-3 / FSDP (strategy_fsdp.cc): parameters sharded per unit of `units`.
std::unique_ptr<Strategy> make_fsdp_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                             comm::Communicator& comm, trace::TrainObserver& observer,
                                             models::UnitSeam* units);

// --bucket-cap-mb style MiB (fractions allowed) to bytes.
std::size_t mib_to_bytes(double mib);

// DDP's bucket assignment for --bucket-cap-mb / --first-bucket-cap-mb.
std::vector<std::vector<size_t>> bucket_assignment(const std::vector<torch::Tensor>& params,
                                                   const TrainOptions& opts);

// Rank 0's parameters and buffers to every rank (through the communicator).
void sync_initial_state(comm::Communicator& comm, const std::vector<torch::Tensor>& params,
                        const std::vector<torch::Tensor>& buffers);
// Rank 0's buffers to every rank, when there are any.
void broadcast_buffers(comm::Communicator& comm, const std::vector<torch::Tensor>& buffers);

class GradBuckets;
class ShardBuckets;


// One bucket per parameter, in reverse registration order (the order
// backward produces gradients in).
std::vector<std::vector<size_t>> per_tensor_assignment(std::size_t num_params);

// What overlap and sync share: the initial broadcast, buckets over the
// communicator (DDP's assignment unless `per_tensor`), optional compression,
// and the buffer broadcast before each forward.
class BucketedReducer : public Strategy {
 public:
  BucketedReducer(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
                  trace::TrainObserver& observer, bool per_tensor = false);
  ~BucketedReducer() override;
  std::vector<std::vector<size_t>> buckets() const override;
  void before_forward() override;
  void set_compression_probe(bool on) override;
  CompressionStats compression_stats() const override;
  bool grads_are_bucket_views() const override { return true; }

 protected:
  comm::Communicator& comm_;
  trace::TrainObserver& observer_;
  std::vector<torch::Tensor> buffers_;
  bool broadcast_buffers_;
  std::unique_ptr<GradBuckets> buckets_;
};

}  // namespace dtbench::train

namespace dtbench::train {

// What zero1 and zero2 share: the initial broadcast, DDP's bucket assignment
// over sharded flat buckets (shard_buckets.h), the buffer broadcast before
// each forward, the optimizer over this rank's shards and the all-gather of
// the parameters after it steps.
class ShardedStrategy : public Strategy {
 public:
  ShardedStrategy(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
                  trace::TrainObserver& observer, bool grads_as_bucket_views);
  ~ShardedStrategy() override;
  std::vector<std::vector<size_t>> buckets() const override;
  std::vector<torch::Tensor> optimizer_parameters() const override;
  void before_forward() override;
  void step(Optimizer& optimizer) override;
  void zero_grad(Optimizer& optimizer) override;

 protected:
  comm::Communicator& comm_;
  trace::TrainObserver& observer_;
  std::vector<torch::Tensor> buffers_;
  bool broadcast_buffers_;
  std::unique_ptr<ShardBuckets> shards_;
};

}  // namespace dtbench::train
