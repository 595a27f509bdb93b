#pragma once
// --trace: reports the moment autograd produced each parameter's gradient
// (a post-hook on its gradient accumulator) to the observer, so every
// reducer's buckets get a ready time and backward's compute its end. Only
// installed while the observer is active; installed before the reducer, so
// its hook runs before the reducer's on the same accumulator.
#include <memory>
#include <vector>

#include <torch/types.h>

#include "trace/observer.h"

namespace torch::autograd {
struct Node;
}

namespace dtbench::train {

class GradReadyProbe {
 public:
  GradReadyProbe(const std::vector<torch::Tensor>& params, trace::TrainObserver& observer);

 private:
  // Tensors hold their accumulators weakly: keep them (and the hooks) alive.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
};

}  // namespace dtbench::train
