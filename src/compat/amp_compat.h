#pragma once
// The two ATen ops of a dynamic loss scaler (what torch.amp.GradScaler
// calls): unscale the gradients while checking them for inf/nan, and update
// the scale. LibTorch 2.x has CPU and CUDA kernels for both; 1.13 has them on
// CUDA only, so on CPU tensors the same arithmetic is done with tensor ops.
#include <vector>

#include <ATen/ATen.h>

#include "compat/torch_version.h"

namespace dtbench::compat {

// grads *= inv_scale (in place); found_inf (float, 1 element) becomes 1 if
// any gradient held an inf or nan, and is left as it was otherwise.
inline void amp_unscale_and_check(std::vector<at::Tensor>& grads, at::Tensor& found_inf,
                                  const at::Tensor& inv_scale) {
#if DTBENCH_TORCH_AT_LEAST(2, 0)
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
#else
  if (found_inf.is_cuda()) {
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
    return;
  }
  for (auto& g : grads) {
    if (!at::isfinite(g).all().item<bool>()) found_inf.fill_(1.0);
    g.mul_(inv_scale);
  }
#endif
}

// GradScaler's update: after a step with found_inf the scale is multiplied by
// backoff and the growth tracker reset; otherwise the tracker counts clean
// steps and after `interval` of them the scale is multiplied by growth.
inline void amp_update_scale(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                             double growth, double backoff, int64_t interval) {
#if DTBENCH_TORCH_AT_LEAST(2, 0)
  at::_amp_update_scale_(scale, growth_tracker, found_inf, growth, backoff, interval);
#else
  if (scale.is_cuda()) {
    at::_amp_update_scale_(scale, growth_tracker, found_inf, growth, backoff, interval);
    return;
  }
  if (found_inf.item<float>() > 0) {
    scale.mul_(backoff);
    growth_tracker.fill_(0);
    return;
  }
  const int64_t clean = growth_tracker.item<int>() + 1;
  if (clean == interval) {
    scale.mul_(growth);
    growth_tracker.fill_(0);
  } else {
    growth_tracker.fill_(static_cast<int>(clean));
  }
#endif
}

// Whether CPU autocast accepts float16 as its lower-precision dtype.
inline constexpr bool cpu_autocast_has_float16() { return DTBENCH_TORCH_AT_LEAST(2, 4); }

}  // namespace dtbench::compat
