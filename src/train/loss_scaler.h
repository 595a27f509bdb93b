#pragma once
// Dynamic loss scaling for float16 mixed precision (torch.amp.GradScaler's
// algorithm): the loss is multiplied by `scale` before backward so small
// float16 gradients do not flush to zero; before the optimizer step the
// gradients are divided by it and checked; a step with an inf/nan gradient is
// skipped and the scale multiplied by `backoff`; after `interval` clean steps
// it is multiplied by `growth`. The scale lives in a tensor on the gradients'
// device (no host sync until someone asks for it).
#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace dtbench::train {

struct LossScalerOptions {
  double init_scale = 65536.0;  // GradScaler's defaults
  double growth = 2.0;
  double backoff = 0.5;
  int64_t interval = 2000;
};

class LossScaler {
 public:
  LossScaler(const LossScalerOptions& opts, const torch::Device& device);

  // loss * scale.
  torch::Tensor scale(const torch::Tensor& loss) const;
  // Divides every defined gradient by the scale and checks them. Returns
  // true when the step must be skipped (an inf or nan was found).
  bool unscale(const std::vector<torch::Tensor>& params);
  // After the (possibly skipped) step: grows or backs off the scale.
  void update();

  double current_scale() const;
  int64_t skipped_steps() const { return skipped_; }

 private:
  LossScalerOptions opts_;
  torch::Tensor scale_, growth_tracker_, found_inf_;
  int64_t skipped_ = 0;
};

}  // namespace dtbench::train
