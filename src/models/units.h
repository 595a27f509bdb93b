#pragma once
// FSDP units: the blocks a user would wrap with fully_shard (a transformer
// block, a ResNet bottleneck, an MLP's hidden layer), in forward order. A
// model with units derives its module from UnitSeam, lists them in its
// constructor, and runs each through run_unit() in its forward; a sharded
// strategy (train/strategy_fsdp.cc) installs UnitHooks to gather a unit's
// parameters just before it runs and free them after. Without hooks
// run_unit is a plain call. A model without units is one (root) unit.
#include <functional>
#include <memory>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace dtbench::models {

class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  // Before unit `unit`'s forward.
  virtual void before_unit(int unit) = 0;
  // After it, with its output; returns the output the model goes on with.
  virtual torch::Tensor after_unit(int unit, const torch::Tensor& output) = 0;
};

class UnitSeam {
 public:
  const std::vector<std::shared_ptr<torch::nn::Module>>& units() const { return units_; }
  void set_unit_hooks(UnitHooks* hooks) { hooks_ = hooks; }

 protected:
  void add_unit(std::shared_ptr<torch::nn::Module> unit) { units_.push_back(std::move(unit)); }
  torch::Tensor run_unit(int unit, const std::function<torch::Tensor(const torch::Tensor&)>& f,
                         const torch::Tensor& x) {
    if (hooks_ == nullptr) return f(x);
    hooks_->before_unit(unit);
    return hooks_->after_unit(unit, f(x));
  }

 private:
  std::vector<std::shared_ptr<torch::nn::Module>> units_;
  UnitHooks* hooks_ = nullptr;
};

}  // namespace dtbench::models
