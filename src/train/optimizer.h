#pragma once
// The optimizer seam: what the trainer asks of an optimizer (step over the
// parameters that have gradients, zero or drop the gradients) and what a
// memory figure needs (float32 state tensors per parameter, bytes held).
// sgd.h and adamw.h are the peers; make_optimizer picks one from
// TrainOptions::optimizer.
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "train/train_options.h"

namespace dtbench::train {

class Optimizer {
 public:
  explicit Optimizer(std::vector<torch::Tensor> params) : params_(std::move(params)) {}
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient; the others are left alone
  // (and get their state on their first step with one).
  virtual void step() = 0;
  // The optimizer's state tensors per parameter (K of the memory formulas:
  // SGD with momentum 1, without 0; AdamW 2).
  virtual int states_per_parameter() const = 0;
  // Bytes of state tensors allocated so far (after the first step: K x the
  // parameters' bytes, for the parameters that had gradients).
  virtual std::int64_t state_bytes() const = 0;

  // Zeroes the gradients in place (they keep their storage, which the
  // bucketed reducers write into), or with set_to_none drops them (what
  // torch.optim's zero_grad() does by default since PyTorch 2.0).
  void zero_grad(bool set_to_none);

 protected:
  std::vector<torch::Tensor> params_;
};

// The optimizer TrainOptions names (validate() has checked the name and the
// hyper-parameters), over `params`.
std::unique_ptr<Optimizer> make_optimizer(const TrainOptions& o, std::vector<torch::Tensor> params);

}  // namespace dtbench::train
