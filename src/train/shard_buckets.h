#pragma once
// Flat buckets sharded over the ranks, for the ZeRO strategies (zero1,
// zero2): DDP's parameter-to-bucket assignment, each bucket padded to a
// multiple of the world size (as FSDP pads its flat parameters) and split in
// equal shards, rank r owning shard r.
//
// Parameters live in the buckets: the constructor makes every parameter's
// data a view of its slot in a flat float32 buffer, so the optimizer can step
// this rank's shard in place (a view of the flat buffer: shards()) and one
// all-gather per bucket (gather_parameters) brings every rank's updated
// shard back into every parameter.
//
// Gradients, two layouts:
//  kBucketViews (zero1): every parameter's .grad is a view of a persistent
//    flat gradient bucket (autograd accumulates into it); after backward the
//    bucket is reduce-scattered and the averaged shard written back into the
//    bucket, where the shard's .grad views it.
//  kShardOnly (zero2): a gradient is copied into its bucket the moment
//    autograd produced it (add_gradient, from a hook) and the parameter's
//    .grad dropped; a full bucket is reduce-scattered at once into a
//    shard-sized gradient made by that reduction (the shard's .grad until
//    zero_grads() drops it, as DeepSpeed's stage 2 holds no gradients between
//    steps), the bucket freed when it finished (waited for when the next
//    bucket launches: at most two full buckets live). Only the shard's
//    gradient outlives the backward.
// Where the backend has no reduce_scatter of its own (Gloo: none in LibTorch
// 1.13, allreduces of copied chunks in 2.x: Communicator::composite_reason)
// a bucket is allreduced and the rank's shard taken from it: the same
// numbers with twice a native reduce_scatter's traffic
// (uses_reduce_scatter() says which).
#include <memory>
#include <vector>

#include <torch/types.h>

#include "comm/communicator.h"
#include "trace/observer.h"

namespace dtbench::train {

class ShardBuckets {
 public:
  enum class Grads { kBucketViews, kShardOnly };
  ShardBuckets(std::vector<torch::Tensor> params, std::vector<std::vector<size_t>> assignment,
               comm::Communicator& comm, Grads grads,
               trace::TrainObserver& observer = trace::null_observer());

  std::size_t size() const { return buckets_.size(); }
  const std::vector<std::vector<size_t>>& assignment() const { return assignment_; }
  bool uses_reduce_scatter() const { return reduce_scatter_; }
  // This rank's shard of every bucket's parameters (views of the flat
  // buffers), each with its averaged gradient shard as .grad after finish().
  const std::vector<torch::Tensor>& shards() const { return shards_; }
  // Elements of padding over all buckets (each bucket up to size - 1).
  std::int64_t padding() const { return padding_; }

  // Parameter `param_index`'s gradient is ready: kShardOnly copies it into
  // its bucket and drops it; returns true when that completes the bucket.
  bool add_gradient(std::size_t param_index);
  // Marks every gradient of bucket `b` ready (kBucketViews: they are in place).
  void fill(std::size_t b);
  // Starts the reduce-scatter (sum) of bucket `b`; buckets go in order.
  void launch(std::size_t b);
  // Launches every complete bucket in order.
  void launch_ready();
  // Waits for every bucket and leaves the average of this rank's shard in
  // the shards' gradients. Throws CommError for a bucket that never completed.
  void finish();
  void reset();
  // All-gathers every bucket's parameters from the ranks' shards (after the
  // optimizer stepped them).
  void gather_parameters();
  // kBucketViews: zeroes the gradient buckets in place; kShardOnly: drops
  // the shards' gradients (made again by the next backward).
  void zero_grads();

 private:
  struct Bucket {
    std::vector<size_t> params;
    std::vector<int64_t> offsets;
    int64_t numel = 0, padded = 0, shard = 0;
    torch::Tensor param_flat;  // padded; the parameters are views of it
    torch::Tensor grad_flat;   // padded; kShardOnly: only while reducing
    torch::Tensor grad_shard;  // the shard's gradient (kBucketViews: a view of grad_flat;
                               // kShardOnly: from finish_bucket to zero_grads)
    torch::Tensor received;    // reduce_scatter's output until finish()
    std::size_t pending = 0;
    comm::WorkPtr work;
  };
  void ensure_grad_flat(Bucket& bucket);
  // Waits for bucket's reduction (if not yet) and leaves its average shard.
  void finish_bucket(Bucket& bucket);

  std::vector<torch::Tensor> params_;
  std::vector<std::vector<size_t>> assignment_;
  std::vector<std::size_t> bucket_of_, slot_of_;
  std::vector<Bucket> buckets_;
  std::vector<torch::Tensor> shards_;
  std::size_t next_launch_ = 0;
  comm::Communicator& comm_;
  Grads grads_;
  trace::TrainObserver& observer_;
  bool reduce_scatter_ = true;
  std::int64_t padding_ = 0;
};

}  // namespace dtbench::train
