#include "train/grad_buckets.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "core/error.h"

namespace dtbench::train {

GradBuckets::GradBuckets(std::vector<torch::Tensor> params,
                         std::vector<std::vector<size_t>> assignment, comm::Communicator& comm)
    : params_(std::move(params)), assignment_(std::move(assignment)), comm_(comm) {
  bucket_of_.assign(params_.size(), 0);
  slot_of_.assign(params_.size(), 0);
  for (std::size_t b = 0; b < assignment_.size(); ++b) {
    Bucket bucket;
    int64_t numel = 0;
    for (std::size_t k = 0; k < assignment_[b].size(); ++k) {
      const std::size_t i = assignment_[b][k];
      DTBENCH_CHECK(i < params_.size(), "bucket assignment names a parameter out of range");
      bucket.params.push_back(i);
      bucket.offsets.push_back(numel);
      bucket_of_[i] = b;
      slot_of_[i] = k;
      numel += params_[i].numel();
    }
    const auto& first = params_[assignment_[b].front()];
    bucket.flat = torch::zeros({numel}, first.options().requires_grad(false));
    bucket.pending = bucket.params.size();
    buckets_.push_back(std::move(bucket));
  }
}

bool GradBuckets::add_gradient(std::size_t i) {
  auto& bucket = buckets_[bucket_of_[i]];
  const auto& g = params_[i].grad();
  if (!g.defined())
    throw CommError(fmt::format("parameter {} has no gradient after its backward hook", i));
  const auto n = params_[i].numel();
  bucket.flat.narrow(0, bucket.offsets[slot_of_[i]], n).view(g.sizes()).copy_(g);
  DTBENCH_CHECK(bucket.pending > 0, "gradient of one parameter reported twice in one backward");
  return --bucket.pending == 0;
}

void GradBuckets::fill(std::size_t b) {
  for (std::size_t i : buckets_[b].params) add_gradient(i);
}

void GradBuckets::launch(std::size_t b) {
  DTBENCH_CHECK(b == next_launch_, "buckets must be launched in order");
  auto& bucket = buckets_[b];
  bucket.work = comm_.allreduce(bucket.flat, bucket.flat, comm::ReduceOp::kSum);
  ++next_launch_;
}

std::size_t GradBuckets::launch_ready() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) launch(next_launch_);
  return next_launch_;
}

void GradBuckets::finish() {
  if (next_launch_ < buckets_.size()) {
    const auto& bucket = buckets_[next_launch_];
    throw CommError(fmt::format(
        "gradient bucket {} of {} never completed: {} of its parameters got no gradient in this "
        "backward (unused parameters are not supported by the overlap/sync reducers)",
        next_launch_, buckets_.size(), bucket.pending));
  }
  const double world = comm_.size();
  torch::NoGradGuard no_grad;
  for (auto& bucket : buckets_) {
    bucket.work->wait(comm_.timeout());
    bucket.work.reset();
    bucket.flat.div_(world);
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      auto& p = params_[bucket.params[k]];
      auto g = p.mutable_grad();
      g.copy_(bucket.flat.narrow(0, bucket.offsets[k], p.numel()).view(g.sizes()));
    }
  }
}

void GradBuckets::reset() {
  for (auto& bucket : buckets_) {
    bucket.pending = bucket.params.size();
    bucket.work.reset();
  }
  next_launch_ = 0;
}

}  // namespace dtbench::train
