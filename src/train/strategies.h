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

// Horovod's tensor fusion (strategy_horovod.cc, horovod_plan.h).
std::unique_ptr<Strategy> make_horovod_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                                comm::Communicator& comm, trace::TrainObserver& observer);

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

// What every strategy of dtbench's own does first and before each forward:
// the constructor broadcasts rank 0's parameters and buffers; before_forward()
// rank 0's buffers (batch-norm statistics, PyTorch DDP's broadcast_buffers),
// reported as the broadcast phase.
class StateSync {
 public:
  StateSync(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
            trace::TrainObserver& observer);
  void before_forward();
  // Strategy::sync_buffers() for the strategies that hold a StateSync.
  bool sync_buffers();

 private:
  comm::Communicator& comm_;
  trace::TrainObserver& observer_;
  std::vector<torch::Tensor> buffers_;
  bool broadcast_buffers_;
};

class GradBuckets;
class ShardBuckets;

// One bucket per parameter, in reverse registration order (the order
// backward produces gradients in).
std::vector<std::vector<size_t>> per_tensor_assignment(std::size_t num_params);

// What overlap and sync share: the state sync, buckets over the
// communicator (DDP's assignment unless `per_tensor`), optional compression.
class BucketedReducer : public Strategy {
 public:
  BucketedReducer(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
                  trace::TrainObserver& observer, bool per_tensor = false);
  ~BucketedReducer() override;
  std::vector<std::vector<size_t>> buckets() const override;
  void before_forward() override;
  bool sync_buffers() override;
  void set_compression_probe(bool on) override;
  CompressionStats compression_stats() const override;
  bool grads_are_bucket_views() const override { return true; }

 protected:
  StateSync state_;
  std::unique_ptr<GradBuckets> buckets_;
};

// What zero1 and zero2 share: the state sync, DDP's bucket assignment over
// sharded flat buckets (shard_buckets.h), the optimizer over this rank's
// shards and the all-gather of the parameters after it steps.
class ShardedStrategy : public Strategy {
 public:
  ShardedStrategy(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
                  trace::TrainObserver& observer, bool grads_as_bucket_views);
  ~ShardedStrategy() override;
  std::vector<std::vector<size_t>> buckets() const override;
  std::vector<torch::Tensor> optimizer_parameters() const override;
  void before_forward() override;
  bool sync_buffers() override;
  void step(Optimizer& optimizer) override;
  void zero_grad(Optimizer& optimizer) override;

 protected:
  StateSync state_;
  std::unique_ptr<ShardBuckets> shards_;
};

}  // namespace dtbench::train
