#include "train/shard_buckets.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "comm/types.h"
#include "core/error.h"
#include "train/grad_buckets.h"

namespace dtbench::train {

ShardBuckets::ShardBuckets(std::vector<torch::Tensor> params,
                           std::vector<std::vector<size_t>> assignment, comm::Communicator& comm,
                           Grads grads, trace::TrainObserver& observer)
    : params_(std::move(params)), assignment_(std::move(assignment)), comm_(comm), grads_(grads),
      observer_(observer) {
  // Where the backend has no reduce_scatter of its own (Gloo: none in 1.13,
  // allreduces of chunks in 2.x) one allreduce and a narrow do it for less.
  reduce_scatter_ = comm_.has_own_reduce_scatter();
  const int n = comm_.size(), rank = comm_.rank();
  bucket_of_.assign(params_.size(), 0);
  slot_of_.assign(params_.size(), 0);
  torch::NoGradGuard no_grad;
  for (std::size_t b = 0; b < assignment_.size(); ++b) {
    Bucket bucket;
    for (std::size_t k = 0; k < assignment_[b].size(); ++k) {
      const std::size_t i = assignment_[b][k];
      DTBENCH_CHECK(i < params_.size(), "bucket assignment names a parameter out of range");
      DTBENCH_CHECK(params_[i].scalar_type() == torch::kFloat, "sharded buckets hold float32 parameters");
      bucket.params.push_back(i);
      bucket.offsets.push_back(bucket.numel);
      bucket_of_[i] = b;
      slot_of_[i] = k;
      bucket.numel += params_[i].numel();
    }
    bucket.shard = (bucket.numel + n - 1) / n;
    bucket.padded = bucket.shard * n;
    padding_ += bucket.padded - bucket.numel;
    const auto options = params_[assignment_[b].front()].options().requires_grad(false);
    bucket.param_flat = torch::zeros({bucket.padded}, options);
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      auto& p = params_[bucket.params[k]];
      auto slot = slot_view(bucket.param_flat, bucket.offsets[k], p);
      slot.copy_(p.detach());
      p.set_data(slot);
      p.mutable_grad() = torch::Tensor();
    }
    // Detached: a plain tensor on the flat storage that the optimizer steps
    // in place and that carries the shard's gradient.
    auto shard = bucket.param_flat.narrow(0, rank * bucket.shard, bucket.shard).detach();
    if (grads_ == Grads::kBucketViews) {
      bucket.grad_flat = torch::zeros({bucket.padded}, options);
      for (std::size_t k = 0; k < bucket.params.size(); ++k) {
        auto& p = params_[bucket.params[k]];
        p.mutable_grad() = slot_view(bucket.grad_flat, bucket.offsets[k], p);
      }
      bucket.grad_shard = bucket.grad_flat.narrow(0, rank * bucket.shard, bucket.shard);
      shard.mutable_grad() = bucket.grad_shard;
    }
    // kShardOnly: the shard's gradient is made by each backward's reduction
    // (finish_bucket) and dropped by zero_grads(), as DeepSpeed's stage 2
    // and FSDP2 under zero_grad(set_to_none=True) hold none between steps.
    shards_.push_back(shard);
    bucket.pending = bucket.params.size();
    buckets_.push_back(std::move(bucket));
  }
}

void ShardBuckets::ensure_grad_flat(Bucket& bucket) {
  if (!bucket.grad_flat.defined())
    bucket.grad_flat = torch::zeros({bucket.padded}, bucket.param_flat.options());
}

bool ShardBuckets::add_gradient(std::size_t i) {
  auto& bucket = buckets_[bucket_of_[i]];
  auto& p = params_[i];
  const auto& g = p.grad();
  if (!g.defined())
    throw CommError(fmt::format("parameter {} has no gradient after its backward hook", i));
  if (grads_ == Grads::kShardOnly) {
    torch::NoGradGuard no_grad;
    ensure_grad_flat(bucket);
    const std::size_t k = slot_of_[i];
    slot_view(bucket.grad_flat, bucket.offsets[k], p).copy_(g);
    p.mutable_grad() = torch::Tensor();  // only the shard's gradient is kept
  }
  DTBENCH_CHECK(bucket.pending > 0, "gradient of one parameter reported twice in one backward");
  return --bucket.pending == 0;
}

void ShardBuckets::fill(std::size_t b) {
  for (std::size_t i : buckets_[b].params) add_gradient(i);
}

void ShardBuckets::launch(std::size_t b) {
  DTBENCH_CHECK(b == next_launch_, "buckets must be launched in order");
  auto& bucket = buckets_[b];
  ensure_grad_flat(bucket);
  const int index = static_cast<int>(b);
  observer_.collective_launch(index, bucket.padded * 4, trace::WireDType::kFloat32, bucket.params);
  if (reduce_scatter_) {
    bucket.received = torch::empty({bucket.shard}, bucket.grad_flat.options());
    bucket.work = comm_.reduce_scatter(bucket.grad_flat, bucket.received, comm::ReduceOp::kSum);
  } else {
    bucket.work = comm_.allreduce(bucket.grad_flat, bucket.grad_flat, comm::ReduceOp::kSum);
  }
  observer_.collective_returned(index);
  if (observer_.active())
    bucket.work->on_done([o = &observer_, index] { o->collective_done(index); });
  ++next_launch_;
  // kShardOnly: at most two full buckets alive (this one and the one
  // before, which has had this bucket's share of backward to finish), as
  // FSDP2 waits for one reduce-scatter in the next unit's post-backward;
  // otherwise every bucket's full gradients would live until finish().
  if (grads_ == Grads::kShardOnly && b > 0) finish_bucket(buckets_[b - 1]);
}

void ShardBuckets::finish_bucket(Bucket& bucket) {
  if (!bucket.work) return;
  const double t0 = trace::clock_us();
  bucket.work->wait(comm_.timeout());
  observer_.waited(t0, trace::clock_us());
  bucket.work.reset();
  torch::NoGradGuard no_grad;
  if (grads_ == Grads::kShardOnly) {
    // A new gradient each backward: the reduce-scatter's output, or this
    // rank's chunk of the allreduced bucket (which is then freed).
    bucket.grad_shard = reduce_scatter_
                            ? bucket.received
                            : bucket.grad_flat.narrow(0, comm_.rank() * bucket.shard, bucket.shard).clone();
    shards_[static_cast<std::size_t>(&bucket - buckets_.data())].mutable_grad() = bucket.grad_shard;
    bucket.grad_flat = torch::Tensor();  // freed
  } else if (reduce_scatter_) {
    bucket.grad_shard.copy_(bucket.received);  // into the bucket, which the .grads view
  }
  bucket.received = torch::Tensor();
  bucket.grad_shard.div_(static_cast<double>(comm_.size()));
}

void ShardBuckets::launch_ready() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) launch(next_launch_);
}

void ShardBuckets::finish() {
  if (next_launch_ < buckets_.size())
    throw CommError(fmt::format(
        "gradient bucket {} of {} never completed: {} of its parameters got no gradient in this "
        "backward (unused parameters are not supported by the sharded strategies)",
        next_launch_, buckets_.size(), buckets_[next_launch_].pending));
  for (auto& bucket : buckets_) finish_bucket(bucket);
}

void ShardBuckets::reset() {
  for (auto& bucket : buckets_) {
    bucket.pending = bucket.params.size();
    bucket.work.reset();
  }
  next_launch_ = 0;
}

void ShardBuckets::gather_parameters() {
  torch::NoGradGuard no_grad;
  // Two gathers in flight at most: a backend may stage a whole bucket per
  // gather (Gloo gathers into a flat buffer of its own), so launching every
  // bucket's at once would hold another copy of all parameters.
  struct Gather {
    torch::Tensor staged;
    comm::WorkPtr work;
  };
  const auto wait_gather = [this](const comm::WorkPtr& work) {
    const double t0 = trace::clock_us();
    work->wait(comm_.timeout());
    observer_.waited(t0, trace::clock_us());
  };
  Gather previous;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    Gather g;
    // The gather writes every chunk of param_flat, this rank's own included:
    // the input must not alias it.
    g.staged = shards_[b].clone();
    const int unit = static_cast<int>(b);
    observer_.gather_launch(unit, buckets_[b].param_flat.numel() * 4);
    g.work = comm_.allgather(g.staged, buckets_[b].param_flat);
    observer_.gather_returned(unit);
    if (observer_.active()) g.work->on_done([o = &observer_, unit] { o->gather_done(unit); });
    if (previous.work) wait_gather(previous.work);
    previous = std::move(g);
  }
  if (previous.work) wait_gather(previous.work);
}

void ShardBuckets::zero_grads() {
  torch::NoGradGuard no_grad;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (grads_ == Grads::kBucketViews) {
      buckets_[b].grad_flat.zero_();
    } else {
      buckets_[b].grad_shard = torch::Tensor();
      shards_[b].mutable_grad() = torch::Tensor();
    }
  }
}

}  // namespace dtbench::train
