#include "train/grad_ready_probe.h"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

namespace dtbench::train {
namespace {

class ReadyStamp : public torch::autograd::FunctionPostHook {
 public:
  ReadyStamp(trace::TrainObserver& observer, std::size_t index) : observer_(observer), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    observer_.gradient_ready(index_);
    return outputs;
  }

 private:
  trace::TrainObserver& observer_;
  std::size_t index_;
};

}  // namespace

GradReadyProbe::GradReadyProbe(const std::vector<torch::Tensor>& params, trace::TrainObserver& observer) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto acc = torch::autograd::impl::grad_accumulator(params[i]);
    acc->add_post_hook(std::make_unique<ReadyStamp>(observer, i));
    accumulators_.push_back(std::move(acc));
  }
}

}  // namespace dtbench::train
