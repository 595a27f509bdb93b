// `overlap`: dtbench's own bucketed reducer. A post-hook on each parameter's
// gradient accumulator copies the gradient into its bucket as soon as
// autograd produced it; a full bucket starts its allreduce at once (in bucket
// order on every rank), so communication runs while backward computes the
// remaining gradients. finish_backward() waits for what is still in flight.
#include <mutex>

#include <torch/csrc/autograd/function.h>
#include <torch/torch.h>

#include "train/grad_buckets.h"
#include "train/strategies.h"

namespace dtbench::train {
namespace {

class OverlapReducer : public BucketedReducer {
 public:
  OverlapReducer(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
                 trace::TrainObserver& observer)
      : BucketedReducer(opts, module, comm, observer) {
    accumulators_ =
        hook_gradient_accumulators(params_, [this](std::size_t i) { gradient_ready(i); });
  }

  std::string name() const override { return "overlap"; }
  void before_backward(const torch::Tensor&) override {
    std::lock_guard<std::mutex> lock(mu_);
    buckets_->reset();
    armed_ = true;
  }
  void finish_backward() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      armed_ = false;
    }
    buckets_->finish();
  }

  void gradient_ready(std::size_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!armed_) return;
    if (buckets_->add_gradient(index)) buckets_->launch_ready();
  }

 private:
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::mutex mu_;
  bool armed_ = false;
};

}  // namespace

std::unique_ptr<Strategy> make_overlap_strategy(const TrainOptions& opts,
                                                  torch::nn::Module& module,
                                                  comm::Communicator& comm,
                                                  trace::TrainObserver& observer) {
  return std::make_unique<OverlapReducer>(opts, module, comm, observer);
}

}  // namespace dtbench::train
