// `zero2` (ZeRO stage 2): gradients sharded too. A hook on each parameter's
// gradient accumulator copies the gradient into its flat bucket the moment
// autograd produced it and drops the parameter's own; a full bucket starts
// its reduce-scatter at once (in bucket order on every rank, overlapping the
// rest of backward, as `overlap`) and is freed when it finished. Only this
// rank's averaged gradient shard outlives the backward; the optimizer steps
// the shard and the updated shards are all-gathered.
#include <mutex>

#include <torch/csrc/autograd/function.h>
#include <torch/torch.h>

#include "train/shard_buckets.h"
#include "train/strategies.h"

namespace dtbench::train {
namespace {

class Zero2Strategy : public ShardedStrategy {
 public:
  Zero2Strategy(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
                trace::TrainObserver& observer)
      : ShardedStrategy(opts, module, comm, observer, /*grads_as_bucket_views=*/false) {
    accumulators_ =
        hook_gradient_accumulators(params_, [this](std::size_t i) { gradient_ready(i); });
  }

  std::string name() const override { return "zero2"; }
  void before_backward(const torch::Tensor&) override {
    std::lock_guard<std::mutex> lock(mu_);
    shards_->reset();
    armed_ = true;
  }
  void finish_backward() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      armed_ = false;
    }
    shards_->finish();
  }

  void gradient_ready(std::size_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!armed_) return;
    if (shards_->add_gradient(index)) shards_->launch_ready();
  }

 private:
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::mutex mu_;
  bool armed_ = false;
};

}  // namespace

std::unique_ptr<Strategy> make_zero2_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                              comm::Communicator& comm, trace::TrainObserver& observer) {
  return std::make_unique<Zero2Strategy>(opts, module, comm, observer);
}

}  // namespace dtbench::train
