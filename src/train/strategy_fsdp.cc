// `fsdp` (ZeRO-3, as PyTorch's FSDP2 `fully_shard` on each block and then on
// the root): parameters sharded per unit (models/units.h: a transformer
// block, a ResNet block, an MLP hidden layer; the rest of the model is the
// root unit). Each rank keeps only its shard of every unit's parameters,
// gradients and optimizer state. Forward: the root is gathered first, then
// before each unit its parameters are all-gathered (the next unit's gather
// prefetched) and after it freed (--reshard-after-forward true, FSDP2's
// default; false keeps them to backward). Backward: a hook on each unit's
// output gathers the unit again where it was freed (prefetching the one
// before); the moment a unit's last gradient is accumulated its gradients
// are reduce-scattered and its parameters freed (the unit reduced before it
// is waited for then: two units' full gradients at most). The optimizer steps shards
// only; nothing is gathered after the step (the next forward does it).
// --param-dtype bf16 (FSDP2's MixedPrecisionPolicy(param_dtype=bfloat16,
// reduce_dtype=float32)): units are gathered and computed with in bfloat16,
// the shards, their gradients and the reduction stay float32; after the last
// step every unit is gathered once more in float32.
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>
#include <torch/csrc/autograd/function.h>
#include <torch/torch.h>

#include "core/error.h"
#include "models/units.h"
#include "train/fsdp_unit.h"
#include "train/optimizer.h"
#include "train/strategies.h"

namespace dtbench::train {
namespace {

class FsdpStrategy : public Strategy, public models::UnitHooks {
 public:
  FsdpStrategy(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
               trace::TrainObserver& observer, models::UnitSeam* seam)
      : Strategy(module.parameters()), state_(opts, module, comm, observer),
        reshard_after_forward_(opts.reshard_after_forward != 0),
        param_dtype_(opts.param_dtype == "bf16" ? at::kBFloat16 : at::kFloat), seam_(seam) {
    std::unordered_map<const void*, std::size_t> index_of;
    for (std::size_t i = 0; i < params_.size(); ++i) index_of[params_[i].unsafeGetTensorImpl()] = i;
    unit_of_.assign(params_.size(), -1);
    std::vector<std::vector<std::size_t>> members;
    if (seam_ != nullptr) {
      for (const auto& unit : seam_->units()) {
        std::vector<std::size_t> mine;
        for (const auto& p : unit->parameters()) {
          const std::size_t i = index_of.at(p.unsafeGetTensorImpl());
          if (unit_of_[i] >= 0) continue;  // shared with an earlier unit: that one owns it
          unit_of_[i] = static_cast<int>(members.size());
          mine.push_back(i);
        }
        if (!mine.empty()) members.push_back(std::move(mine));
      }
    }
    std::vector<std::size_t> root;
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (unit_of_[i] < 0) {
        unit_of_[i] = static_cast<int>(members.size());
        root.push_back(i);
      }
    const bool has_root = !root.empty();
    if (has_root) members.push_back(std::move(root));
    for (std::size_t u = 0; u < members.size(); ++u) {
      const bool is_root = has_root && u + 1 == members.size();
      units_.push_back(std::make_unique<FsdpUnit>(
          static_cast<int>(u), is_root ? "the root" : fmt::format("block {}", u), members[u], params_,
          comm, observer, param_dtype_));
    }
    blocks_ = static_cast<int>(units_.size()) - (has_root ? 1 : 0);
    root_ = has_root ? units_.back().get() : nullptr;
    accumulators_ = hook_gradient_accumulators(params_, [this](std::size_t i) { gradient_ready(i); });
    if (seam_ != nullptr) seam_->set_unit_hooks(this);
  }
  ~FsdpStrategy() override {
    if (seam_ != nullptr) seam_->set_unit_hooks(nullptr);
  }

  std::string name() const override { return "fsdp"; }
  std::vector<std::vector<size_t>> buckets() const override {
    std::vector<std::vector<size_t>> out;
    for (const auto& u : units_) out.push_back(u->params());
    return out;
  }
  std::vector<torch::Tensor> optimizer_parameters() const override {
    std::vector<torch::Tensor> out;
    for (const auto& u : units_) out.push_back(u->shard());
    return out;
  }

  void before_forward() override {
    state_.before_forward();
    if (root_ != nullptr) root_->gather_async();
    if (blocks_ > 0) units_[0]->gather_async();  // prefetched behind the root's
    if (root_ != nullptr) root_->wait_gathered();
  }
  void before_unit(int u) override {
    check_unit(u);
    units_[u]->wait_gathered();
    if (u + 1 < blocks_) units_[u + 1]->gather_async();
  }
  torch::Tensor after_unit(int u, const torch::Tensor& output) override {
    check_unit(u);
    if (reshard_after_forward_) units_[u]->reshard();
    if (output.requires_grad()) {
      // Runs when the gradient of the unit's output is complete: before any
      // of the unit's own backward.
      auto out = output;
      out.register_hook([this, u](const torch::Tensor& grad) {
        pre_backward(u);
        return grad;
      });
      return out;
    }
    return output;
  }

  void before_backward(const torch::Tensor&) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& u : units_) u->reset();
    launched_ = 0;
    last_reduced_ = nullptr;
    armed_ = true;
  }
  void finish_backward() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      armed_ = false;
    }
    for (std::size_t u = 0; u < units_.size(); ++u)
      if (units_[u]->pending() > 0)
        throw CommError(fmt::format(
            "FSDP unit {} of {}: {} of its parameters got no gradient in this backward (unused "
            "parameters are not supported by fsdp)",
            u, units_.size(), units_[u]->pending()));
    for (auto& u : units_) u->finish_reduce();
    if (root_ != nullptr) root_->reshard();
  }
  void step(Optimizer& optimizer) override { optimizer.step(); }
  void zero_grad(Optimizer&) override {
    for (auto& u : units_) u->zero_grad();
  }
  bool sync_buffers() override { return state_.sync_buffers(); }
  void finish() override {
    if (param_dtype_ == at::kFloat)
      for (auto& u : units_) u->gather_async();  // all in flight at once
    for (auto& u : units_) u->gather_full_precision();
  }

 private:
  void check_unit(int u) const {
    DTBENCH_CHECK(u >= 0 && u < blocks_, "a model ran a unit it did not list");
  }
  void pre_backward(int u) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!armed_) return;
    units_[u]->wait_gathered();
    if (u > 0) units_[u - 1]->gather_async();
  }
  void gradient_ready(std::size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!armed_) return;
    auto& unit = *units_[unit_of_[i]];
    if (!unit.add_gradient(i)) return;
    unit.launch_reduce(launched_++);
    if (&unit != root_) unit.reshard();
    // The unit reduced before this one has had this unit's backward to
    // finish: wait for it, so that at most two units' full gradients live
    // (FSDP2 waits for the previous reduce-scatter in each post-backward).
    if (last_reduced_ != nullptr) last_reduced_->finish_reduce();
    last_reduced_ = &unit;
  }

  StateSync state_;
  bool reshard_after_forward_;
  at::ScalarType param_dtype_;
  models::UnitSeam* seam_;
  std::vector<std::unique_ptr<FsdpUnit>> units_;  // the blocks in forward order, then the root
  FsdpUnit* root_ = nullptr;
  int blocks_ = 0;
  std::vector<int> unit_of_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::mutex mu_;
  bool armed_ = false;
  int launched_ = 0;
  FsdpUnit* last_reduced_ = nullptr;
};

}  // namespace

std::unique_ptr<Strategy> make_fsdp_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                             comm::Communicator& comm, trace::TrainObserver& observer,
                                             models::UnitSeam* units) {
  return std::make_unique<FsdpStrategy>(opts, module, comm, observer, units);
}

}  // namespace dtbench::train
