#include "train/optimizer.h"

#include <ATen/ATen.h>

#include "train/adamw.h"
#include "train/sgd.h"

namespace dtbench::train {

void Optimizer::zero_grad(bool set_to_none) {
  if (set_to_none) {
    for (auto& p : params_) p.mutable_grad().reset();
    return;
  }
  std::vector<at::Tensor> grads;
  for (auto& p : params_)
    if (p.grad().defined()) grads.push_back(p.mutable_grad());
  if (!grads.empty()) at::_foreach_zero_(grads);
}

std::unique_ptr<Optimizer> make_optimizer(const TrainOptions& o, std::vector<torch::Tensor> params) {
  if (o.optimizer == "adamw") {
    AdamW::Options a;
    a.lr = effective_lr(o);
    a.weight_decay = effective_weight_decay(o);
    return std::make_unique<AdamW>(std::move(params), a);
  }
  return std::make_unique<Sgd>(std::move(params), effective_lr(o), effective_momentum(o), effective_weight_decay(o));
}

}  // namespace dtbench::train
