// `overlap`: dtbench's own bucketed reducer. A post-hook on each parameter's
// gradient accumulator copies the gradient into its bucket as soon as
// autograd produced it; a full bucket starts its allreduce at once (in bucket
// order on every rank), so communication runs while backward computes the
// remaining gradients. finish_backward() waits for what is still in flight.
#include <mutex>

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/torch.h>

#include "train/grad_buckets.h"
#include "train/reducers.h"

namespace dtbench::train {
namespace {

class OverlapReducer;

class ReadyHook : public torch::autograd::FunctionPostHook {
 public:
  ReadyHook(OverlapReducer* owner, std::size_t index) : owner_(owner), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override;

 private:
  OverlapReducer* owner_;
  std::size_t index_;
};

class OverlapReducer : public BucketedReducer {
 public:
  OverlapReducer(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
                 trace::TrainObserver& observer)
      : BucketedReducer(opts, module, comm, observer) {
    // The tensor holds its accumulator only weakly: keep it alive, or the
    // hook disappears and gradients silently stop being reduced.
    for (std::size_t i = 0; i < params_.size(); ++i) {
      auto acc = torch::autograd::impl::grad_accumulator(params_[i]);
      acc->add_post_hook(std::make_unique<ReadyHook>(this, i));
      accumulators_.push_back(std::move(acc));
    }
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

torch::autograd::variable_list ReadyHook::operator()(const torch::autograd::variable_list& outputs,
                                                     const torch::autograd::variable_list&) {
  owner_->gradient_ready(index_);
  return outputs;
}

}  // namespace

std::unique_ptr<GradReducer> make_overlap_reducer(const TrainOptions& opts,
                                                  torch::nn::Module& module,
                                                  comm::Communicator& comm,
                                                  trace::TrainObserver& observer) {
  return std::make_unique<OverlapReducer>(opts, module, comm, observer);
}

}  // namespace dtbench::train
