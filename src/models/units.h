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
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "core/error.h"
#include "models/checkpoint.h"

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
  // What forward keeps for backward; "" when this model can, else why not
  // (a model without attention has nothing for kSelective to recompute).
  std::string set_recompute(Recompute r) {
    if (r == Recompute::kSelective && !has_attention())
      return "selective recomputes the attention core, and this model has no attention (use full)";
    if (r == Recompute::kFull)
      for (const auto& unit : units_)
        for (const auto& m : unit ? unit->modules() : std::vector<std::shared_ptr<torch::nn::Module>>{})
          if (m->name().find("Dropout") != std::string::npos)
            return "a block holds dropout, whose recomputation would draw other random numbers";
    recompute_ = r;
    return "";
  }
  Recompute recompute() const { return recompute_; }

 protected:
  virtual bool has_attention() const { return false; }
  bool recompute_attention() const { return recompute_ == Recompute::kSelective; }
  void add_unit(std::shared_ptr<torch::nn::Module> unit) { units_.push_back(std::move(unit)); }
  // A pipeline stage's: the units outside [first, end) are let go (null;
  // their indices stay the model's).
  void keep_units(int64_t first, int64_t end) {
    for (int64_t i = 0; i < static_cast<int64_t>(units_.size()); ++i)
      if (i < first || i >= end) units_[static_cast<std::size_t>(i)] = nullptr;
  }
  torch::Tensor run_unit(int unit, const std::function<torch::Tensor(const torch::Tensor&)>& f,
                         const torch::Tensor& x) {
    if (hooks_ != nullptr) hooks_->before_unit(unit);
    const auto& held = units_.at(static_cast<std::size_t>(unit));
    DTBENCH_CHECK(held != nullptr, "a unit outside this pipeline stage ran");
    const auto& module = *held;
    auto y = recompute_ == Recompute::kFull
                 ? checkpoint([f](const std::vector<torch::Tensor>& in) { return f(in[0]); }, {x},
                              module.parameters(), module.buffers())
                 : f(x);
    return hooks_ != nullptr ? hooks_->after_unit(unit, y) : y;
  }

 private:
  std::vector<std::shared_ptr<torch::nn::Module>> units_;
  UnitHooks* hooks_ = nullptr;
  Recompute recompute_ = Recompute::kNone;
};

}  // namespace dtbench::models
