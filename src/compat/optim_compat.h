#pragma once
// Where torch.optim's AdamW rounds differently between LibTorch versions.
// PyTorch 2.0 moved Adam/AdamW's first moment from mul_ + add_ to lerp_
// (exp_avg.lerp_(grad, 1 - beta1); _foreach_lerp_ in the multi-tensor path)
// and its bias correction's square root from math.sqrt to ** 0.5: the same
// values up to the last bit, which a bit-for-bit check against the
// installed torch.optim.AdamW sees.
#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "compat/torch_version.h"

namespace dtbench::compat {

// exp_avgs = beta1 * exp_avgs + (1 - beta1) * grads, as torch.optim.AdamW of
// this LibTorch version computes it.
inline void adam_first_moment_(std::vector<at::Tensor>& exp_avgs, const std::vector<at::Tensor>& grads,
                               double beta1) {
#if DTBENCH_TORCH_AT_LEAST(2, 0)
  at::_foreach_lerp_(exp_avgs, grads, 1 - beta1);
#else
  at::_foreach_mul_(exp_avgs, beta1);
  at::_foreach_add_(exp_avgs, grads, 1 - beta1);
#endif
}

// sqrt(1 - beta2^t), as torch.optim.AdamW of this LibTorch version computes it.
inline double adam_bias_correction2_sqrt(double bias_correction2) {
#if DTBENCH_TORCH_AT_LEAST(2, 0)
  return std::pow(bias_correction2, 0.5);
#else
  return std::sqrt(bias_correction2);
#endif
}

}  // namespace dtbench::compat
