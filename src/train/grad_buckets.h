#pragma once
// Flat gradient buckets for dtbench's own reducers (overlap, sync,
// allreduce-after-backward): a parameter-to-bucket assignment, one contiguous
// buffer per bucket (allocated once, reused every iteration), an allreduce
// per bucket launched in bucket order on every rank, optionally compressed
// to float16 / bfloat16 on the wire. Where the backend has no bfloat16
// allreduce, bf16 buckets travel through an allgather and are summed locally
// in rank order (so every rank still gets identical bytes).
//
// Gradients live in the buckets (as PyTorch DDP's gradient_as_bucket_view):
// the constructor makes every parameter's .grad() a view of its slot in the
// bucket (with the parameter's own strides where it is dense, so a
// channels-last weight keeps a channels-last gradient), autograd accumulates
// into it in place, and the average is written where the optimizer reads it:
// no copy in, no copy back. A gradient that was replaced by another tensor
// (set to None and re-created, assigned by hand) is copied into its slot and
// re-pointed at it after the reduction.
#include <memory>
#include <vector>

#include <torch/types.h>

#include "comm/communicator.h"
#include "trace/observer.h"
#include "train/compression.h"

namespace dtbench::train {

enum class Compression { kNone, kFp16, kBf16 };
// "none", "fp16", "bf16"; throws UsageError otherwise.
Compression parse_compression(const std::string& name);

// Parameter `p`'s slot in `flat` at `offset`, with p's strides where p is
// dense (as c10d's Reducer lays out its bucket views), else contiguous.
torch::Tensor slot_view(const torch::Tensor& flat, int64_t offset, const torch::Tensor& p);

class GradBuckets {
 public:
  GradBuckets(std::vector<torch::Tensor> params, std::vector<std::vector<size_t>> assignment,
              comm::Communicator& comm, Compression compression = Compression::kNone,
              trace::TrainObserver& observer = trace::null_observer());

  std::size_t size() const { return buckets_.size(); }
  const std::vector<std::vector<size_t>>& assignment() const { return assignment_; }
  // Bucket holding parameter `param_index`.
  std::size_t bucket_of(std::size_t param_index) const { return bucket_of_[param_index]; }

  // Marks parameter `param_index`'s gradient ready (copying it into its slot
  // when it is not the slot's view); returns true when that completes the
  // bucket. Throws CommError for a missing gradient.
  bool add_gradient(std::size_t param_index);
  // Marks every gradient of bucket `b` ready (sync reducer).
  void fill(std::size_t b);
  // Starts the allreduce (sum) of bucket `b`. Buckets must be launched in order.
  void launch(std::size_t b);
  // Launches every complete bucket in order; returns how many are launched.
  std::size_t launch_ready();
  // Waits for every launched bucket and divides by the world size, which
  // leaves the averages in the parameters' gradients. Throws CommError when a
  // bucket never completed (a parameter without gradient) and TimeoutError.
  void finish();
  // Clears the per-iteration state.
  void reset();

  // While on, every compressed bucket is also reduced in float32 and the
  // difference accumulated into stats() (the error probe; costs a second
  // allreduce per bucket, so it is used on untimed iterations only).
  void set_probe(bool on) { probe_ = on; }
  const CompressionStats& stats() const { return stats_; }

 private:
  struct Bucket {
    std::vector<size_t> params;
    std::vector<int64_t> offsets;
    std::vector<torch::Tensor> views;  // each parameter's slot, shaped as its gradient
    torch::Tensor flat;   // float32 gradients, then their average
    torch::Tensor wire;   // compressed copy (fp16/bf16) that is allreduced
    torch::Tensor exact;  // float32 copy reduced alongside while probing
    torch::Tensor gathered;  // bf16 without a bf16 allreduce: every rank's wire
    double scale = 1;     // float16 only: power of two the sum is scaled by
    std::size_t pending = 0;
    comm::WorkPtr work, exact_work;
  };
  void finish_compressed(Bucket& bucket);
  void record_probe(Bucket& bucket);

  std::vector<torch::Tensor> params_;
  std::vector<std::vector<size_t>> assignment_;
  std::vector<std::size_t> bucket_of_;
  std::vector<std::size_t> slot_of_;
  std::vector<Bucket> buckets_;
  std::size_t next_launch_ = 0;
  comm::Communicator& comm_;
  Compression compression_;
  trace::TrainObserver& observer_;
  bool probe_ = false;
  // bfloat16 on a backend that cannot reduce it (Gloo in LibTorch 1.13): the
  // bf16 buckets are allgathered (as raw 16-bit words) and summed in float32.
  bool bf16_gather_ = false;
  CompressionStats stats_;
};

}  // namespace dtbench::train
