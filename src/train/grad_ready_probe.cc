#include "train/grad_ready_probe.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace dtbench::train {
namespace {

// Calls `ready(index)` after the accumulator it is installed on has run.
class AccumulatedHook : public torch::autograd::FunctionPostHook {
 public:
  AccumulatedHook(std::function<void(std::size_t)> ready, std::size_t index)
      : ready_(std::move(ready)), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    ready_(index_);
    return outputs;
  }

 private:
  std::function<void(std::size_t)> ready_;
  std::size_t index_;
};

}  // namespace

std::vector<std::shared_ptr<torch::autograd::Node>> hook_gradient_accumulators(
    const std::vector<torch::Tensor>& params, std::function<void(std::size_t)> ready, bool first) {
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto acc = torch::autograd::impl::grad_accumulator(params[i]);
    auto hook = std::make_unique<AccumulatedHook>(ready, i);
    if (first)
      acc->post_hooks().insert(acc->post_hooks().begin(), std::move(hook));
    else
      acc->add_post_hook(std::move(hook));
    accumulators.push_back(std::move(acc));
  }
  return accumulators;
}

GradReadyProbe::GradReadyProbe(const std::vector<torch::Tensor>& params, trace::TrainObserver& observer)
    : accumulators_(hook_gradient_accumulators(
          params, [&observer](std::size_t i) { observer.gradient_ready(i); }, /*first=*/true)) {}

}  // namespace dtbench::train
