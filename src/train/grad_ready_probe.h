#pragma once
// Hooks that run once autograd has accumulated a parameter's gradient (a
// post-hook on its gradient accumulator): the strategies that reduce during
// backward (overlap, zero2) start their buckets from them, and --trace's
// probe reports each moment to the observer, so every strategy's buckets get
// a ready time and backward's compute its end. The probe is only installed
// while the observer is active, after the strategy (which may change a
// parameter's dtype, and with it its accumulator: fsdp --param-dtype bf16),
// first among each accumulator's hooks, so its stamp precedes the
// strategy's launch.
#include <functional>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "trace/observer.h"

namespace torch::autograd {
struct Node;
}

namespace dtbench::train {

// Installs `ready(i)` on parameter i's gradient accumulator for every i,
// after its other post-hooks (or before them, with `first`). Returns the
// accumulators: the caller keeps them alive (a tensor holds its accumulator
// only weakly, and a dropped one takes the hook with it).
std::vector<std::shared_ptr<torch::autograd::Node>> hook_gradient_accumulators(
    const std::vector<torch::Tensor>& params, std::function<void(std::size_t)> ready,
    bool first = false);

class GradReadyProbe {
 public:
  GradReadyProbe(const std::vector<torch::Tensor>& params, trace::TrainObserver& observer);

 private:
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
};

}  // namespace dtbench::train
