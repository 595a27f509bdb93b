#pragma once
// Internal to train/: the constructors of each reducer and the steps they share.
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "train/grad_reducer.h"

namespace dtbench::train {

// PyTorch DDP's broadcast bucket for parameters and buffers (250 MiB).
constexpr std::size_t kBroadcastBytes = 250u << 20;

std::unique_ptr<GradReducer> make_ddp_reducer(const TrainOptions& opts, torch::nn::Module& module,
                                              comm::Communicator& comm, trace::TrainObserver& observer);
std::unique_ptr<GradReducer> make_overlap_reducer(const TrainOptions& opts,
                                                  torch::nn::Module& module,
                                                  comm::Communicator& comm, trace::TrainObserver& observer);
// sync with DDP's buckets; allreduce-after-backward (per_tensor) with one
// bucket per parameter, i.e. one allreduce per gradient tensor.
std::unique_ptr<GradReducer> make_sync_reducer(const TrainOptions& opts, torch::nn::Module& module,
                                               comm::Communicator& comm, bool per_tensor,
                                               trace::TrainObserver& observer);

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

// One bucket per parameter, in reverse registration order (the order
// backward produces gradients in).
std::vector<std::vector<size_t>> per_tensor_assignment(std::size_t num_params);

// What overlap and sync share: the initial broadcast, buckets over the
// communicator (DDP's assignment unless `per_tensor`), optional compression,
// and the buffer broadcast before each forward.
class BucketedReducer : public GradReducer {
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
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> buffers_;
  bool broadcast_buffers_;
  std::unique_ptr<GradBuckets> buckets_;
};

}  // namespace dtbench::train
