#include "layout/tp_region.h"

#include <cstdint>

#include <torch/csrc/autograd/custom_function.h>

#include "comm/communicator.h"

namespace dtbench::layout {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The communicator rides in the context as an integer (saved_data holds
// IValues); it outlives every graph that uses it.
comm::Communicator& group_of(AutogradContext* ctx) {
  return *reinterpret_cast<comm::Communicator*>(ctx->saved_data["group"].toInt());
}

torch::Tensor summed(comm::Communicator& group, const torch::Tensor& x) {
  torch::Tensor out = x.clone(at::MemoryFormat::Contiguous);  // never the caller's buffer
  group.allreduce(out, out, comm::ReduceOp::kSum)->wait(group.timeout());
  return out;
}

// Identity forward; the gradient summed over the group backward.
class CopyToRegion : public torch::autograd::Function<CopyToRegion> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t group) {
    ctx->saved_data["group"] = group;
    return x;  // autograd makes the returned input a new output of this function
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {summed(group_of(ctx), grads[0]), torch::Tensor()};
  }
};

// Summed over the group forward; identity backward.
class ReduceFromRegion : public torch::autograd::Function<ReduceFromRegion> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t group) {
    return summed(*reinterpret_cast<comm::Communicator*>(group), x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) { return {grads[0], torch::Tensor()}; }
};

}  // namespace

models::TpRegion make_tp_region(comm::Communicator& tp) {
  models::TpRegion r;
  r.size = tp.size();
  r.rank = tp.rank();
  if (r.size == 1) {
    r.copy_in = [](const torch::Tensor& x) { return x; };
    r.reduce_out = [](const torch::Tensor& x) { return x; };
    return r;
  }
  const auto group = static_cast<int64_t>(reinterpret_cast<std::intptr_t>(&tp));
  r.copy_in = [group](const torch::Tensor& x) { return CopyToRegion::apply(x, group); };
  r.reduce_out = [group](const torch::Tensor& x) { return ReduceFromRegion::apply(x, group); };
  return r;
}

}  // namespace dtbench::layout
