#pragma once
// Flat gradient buckets for dtbench's own reducers (overlap, sync): the same
// parameter-to-bucket assignment PyTorch DDP computes, one contiguous buffer
// per bucket (allocated once, reused every iteration), an allreduce per
// bucket launched in bucket order on every rank.
#include <memory>
#include <vector>

#include <torch/types.h>

#include "comm/communicator.h"

namespace dtbench::train {

class GradBuckets {
 public:
  GradBuckets(std::vector<torch::Tensor> params, std::vector<std::vector<size_t>> assignment,
              comm::Communicator& comm);

  std::size_t size() const { return buckets_.size(); }
  const std::vector<std::vector<size_t>>& assignment() const { return assignment_; }
  // Bucket holding parameter `param_index`.
  std::size_t bucket_of(std::size_t param_index) const { return bucket_of_[param_index]; }

  // Copies parameter `param_index`'s gradient into its bucket; returns true
  // when that completes the bucket. Throws CommError for a missing gradient.
  bool add_gradient(std::size_t param_index);
  // Copies every gradient of bucket `b` in (sync reducer).
  void fill(std::size_t b);
  // Starts the allreduce (sum) of bucket `b`. Buckets must be launched in order.
  void launch(std::size_t b);
  // Launches every complete bucket in order; returns how many are launched.
  std::size_t launch_ready();
  // Waits for every launched bucket, divides by the world size and writes the
  // averages back into the parameters' gradients. Throws CommError when a
  // bucket never completed (a parameter without gradient) and TimeoutError.
  void finish();
  // Clears the per-iteration state.
  void reset();

 private:
  struct Bucket {
    std::vector<size_t> params;
    std::vector<int64_t> offsets;
    torch::Tensor flat;
    std::size_t pending = 0;
    comm::WorkPtr work;
  };
  std::vector<torch::Tensor> params_;
  std::vector<std::vector<size_t>> assignment_;
  std::vector<std::size_t> bucket_of_;
  std::vector<std::size_t> slot_of_;
  std::vector<Bucket> buckets_;
  std::size_t next_launch_ = 0;
  comm::Communicator& comm_;
};

}  // namespace dtbench::train
