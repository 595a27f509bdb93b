#include "models/checkpoint.h"

#include <stdexcept>
#include <string>
#include <unordered_set>

#include <ATen/core/ivalue.h>
#include <fmt/format.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/custom_class.h>

#include "compat/train_compat.h"
#include "core/error.h"

namespace dtbench::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What backward needs that is not a tensor to save: the region, how many of
// the function's tensors are its inputs (the rest are parameters), and the
// autocast state forward ran under.
struct Saved : torch::CustomClassHolder {
  Region region;
  std::size_t inputs = 0;
  std::vector<torch::Tensor> params;  // referenced, not saved: a strategy may swap their storage
  std::vector<torch::Tensor> buffers;  // put back after the recomputation
  bool cpu_amp = false, cuda_amp = false;
  at::ScalarType cpu_dtype = at::kBFloat16, cuda_dtype = at::kHalf;
};

// Sets autocast as forward had it while alive, then restores the thread's.
class AutocastAsInForward {
 public:
  explicit AutocastAsInForward(const Saved& s)
      : cpu_(compat::cpu_autocast_enabled()), cuda_(compat::cuda_autocast_enabled()),
        cpu_dtype_(compat::cpu_autocast_dtype()), cuda_dtype_(compat::cuda_autocast_dtype()),
        change_cpu_(cpu_ != s.cpu_amp || (s.cpu_amp && cpu_dtype_ != s.cpu_dtype)),
        change_cuda_(cuda_ != s.cuda_amp || (s.cuda_amp && cuda_dtype_ != s.cuda_dtype)) {
    if (change_cpu_) compat::set_cpu_autocast(s.cpu_amp, s.cpu_dtype);
    if (change_cuda_) compat::set_cuda_autocast(s.cuda_amp, s.cuda_dtype);
  }
  ~AutocastAsInForward() {
    if (change_cpu_) compat::set_cpu_autocast(cpu_, cpu_dtype_);
    if (change_cuda_) compat::set_cuda_autocast(cuda_, cuda_dtype_);
  }
  AutocastAsInForward(const AutocastAsInForward&) = delete;
  AutocastAsInForward& operator=(const AutocastAsInForward&) = delete;

 private:
  bool cpu_, cuda_;
  at::ScalarType cpu_dtype_, cuda_dtype_;
  bool change_cpu_, change_cuda_;
};

// Every leaf `out`'s graph accumulates into must be one the caller
// differentiates for (`wrt`): otherwise its gradient would be lost.
void check_every_leaf_listed(const torch::Tensor& out, const variable_list& wrt) {
  std::unordered_set<const void*> listed;
  for (const auto& t : wrt) listed.insert(t.unsafeGetTensorImpl());
  std::unordered_set<const torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> todo{out.grad_fn().get()};
  while (!todo.empty()) {
    auto* node = todo.back();
    todo.pop_back();
    if (node == nullptr || !seen.insert(node).second) continue;
    if (auto* acc = dynamic_cast<torch::autograd::AccumulateGrad*>(node)) {
      if (listed.count(acc->variable.unsafeGetTensorImpl()) == 0) {
        std::string shape;
        for (const auto d : acc->variable.sizes()) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
        throw std::logic_error(fmt::format(
            "activation checkpointing: a tensor of shape [{}] that needs a gradient is used inside a checkpointed "
            "region without being one of its parameters (its gradient would be lost)",
            shape));
      }
      continue;
    }
    for (const auto& edge : node->next_edges()) todo.push_back(edge.function.get());
  }
}

// Copies of `buffers` now; written back into them when it goes.
class BuffersPutBack {
 public:
  explicit BuffersPutBack(const std::vector<torch::Tensor>& buffers) : buffers_(buffers) {
    for (const auto& b : buffers_) copies_.push_back(b.clone());
  }
  ~BuffersPutBack() {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < buffers_.size(); ++i) buffers_[i].copy_(copies_[i]);
  }
  BuffersPutBack(const BuffersPutBack&) = delete;
  BuffersPutBack& operator=(const BuffersPutBack&) = delete;

 private:
  std::vector<torch::Tensor> buffers_, copies_;
};

class Checkpoint : public torch::autograd::Function<Checkpoint> {
 public:
  // `tensors`: the region's inputs, then its parameters.
  static torch::Tensor forward(AutogradContext* ctx, c10::intrusive_ptr<Saved> saved, at::TensorList tensors) {
    const std::vector<torch::Tensor> inputs(tensors.begin(), tensors.begin() + static_cast<long>(saved->inputs));
    saved->cpu_amp = compat::cpu_autocast_enabled();
    saved->cpu_dtype = compat::cpu_autocast_dtype();
    saved->cuda_amp = compat::cuda_autocast_enabled();
    saved->cuda_dtype = compat::cuda_autocast_dtype();
    ctx->save_for_backward(inputs);
    auto out = saved->region(inputs);  // forward runs without grad here: nothing inside is kept
    ctx->saved_data["region"] = c10::IValue::make_capsule(saved);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto saved = c10::static_intrusive_pointer_cast<Saved>(ctx->saved_data["region"].toCapsule());
    const auto kept = ctx->get_saved_variables();
    std::vector<torch::Tensor> inputs;
    variable_list wrt;
    std::vector<std::size_t> slot;  // wrt[k] is the function's tensor slot[k]
    for (std::size_t i = 0; i < kept.size(); ++i) {
      const bool differentiable = kept[i].requires_grad();
      inputs.push_back(kept[i].detach().requires_grad_(differentiable));
      if (differentiable) {
        wrt.push_back(inputs.back());
        slot.push_back(i);
      }
    }
    for (std::size_t j = 0; j < saved->params.size(); ++j)
      if (saved->params[j].requires_grad()) {
        wrt.push_back(saved->params[j]);
        slot.push_back(kept.size() + j);
      }
    // The buffers as forward left them, put back once the recomputed graph
    // is differentiated (batch norm's backward reads them at the version it
    // saved).
    BuffersPutBack put_back(saved->buffers);
    torch::Tensor out;
    {
      AutocastAsInForward amp(*saved);
      torch::AutoGradMode grad_on(true);
      out = saved->region(inputs);
    }
    variable_list result(1 + kept.size() + saved->params.size());  // the Saved argument gets none
    if (wrt.empty() || !out.requires_grad()) return result;
    check_every_leaf_listed(out, wrt);
    const auto grads = torch::autograd::grad({out}, wrt, {grad_out[0]}, /*retain_graph=*/false,
                                             /*create_graph=*/false, /*allow_unused=*/true);
    for (std::size_t k = 0; k < grads.size(); ++k) result[1 + slot[k]] = grads[k];
    return result;
  }
};

}  // namespace

torch::Tensor checkpoint(Region region, const std::vector<torch::Tensor>& inputs,
                         const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& buffers) {
  if (!torch::GradMode::is_enabled()) return region(inputs);
  auto saved = c10::make_intrusive<Saved>();
  saved->region = std::move(region);
  saved->inputs = inputs.size();
  std::unordered_set<const void*> once;  // a parameter listed twice would get its gradient twice
  for (const auto& p : params)
    if (once.insert(p.unsafeGetTensorImpl()).second) saved->params.push_back(p);
  saved->buffers = buffers;
  std::vector<torch::Tensor> tensors = inputs;
  tensors.insert(tensors.end(), saved->params.begin(), saved->params.end());
  return Checkpoint::apply(saved, at::TensorList(tensors));
}

}  // namespace dtbench::models
