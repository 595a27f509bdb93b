#include "layout/tp_region.h"

#include <chrono>
#include <cstdint>

#include <torch/csrc/autograd/custom_function.h>

#include "comm/communicator.h"

namespace dtbench::layout {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The communicator and the meter ride in the context as integers
// (saved_data holds IValues); both outlive every graph that uses them.
struct RegionGroup {
  int64_t comm = 0;
  int64_t meter = 0;  // 0: none
};

torch::Tensor summed(const RegionGroup& g, const torch::Tensor& x) {
  auto& group = *reinterpret_cast<comm::Communicator*>(g.comm);
  const auto t0 = std::chrono::steady_clock::now();
  // Under autocast a product comes out in bfloat16; a backend without
  // bfloat16 sums (Gloo in LibTorch 1.13) sums it in float32 instead.
  const auto dtype = x.scalar_type();
  const bool widen = (dtype == torch::kBFloat16 || dtype == torch::kHalf) &&
                     !group.unsupported_reason(comm::Collective::kAllreduce, comm::from_scalar_type(dtype),
                                               comm::ReduceOp::kSum)
                          .empty();
  // Never the caller's buffer.
  torch::Tensor out = widen ? x.to(torch::kFloat).contiguous() : x.clone(at::MemoryFormat::Contiguous);
  group.allreduce(out, out, comm::ReduceOp::kSum)->wait(group.timeout());
  if (g.meter != 0) {
    auto& m = *reinterpret_cast<TpCommMeter*>(g.meter);
    ++m.calls;
    m.bytes += static_cast<std::int64_t>(out.nbytes());
    m.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return widen ? out.to(dtype) : out;
}

// Identity forward; the gradient summed over the group backward.
class CopyToRegion : public torch::autograd::Function<CopyToRegion> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t comm, int64_t meter) {
    ctx->saved_data["comm"] = comm;
    ctx->saved_data["meter"] = meter;
    return x;  // autograd makes the returned input a new output of this function
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const RegionGroup g{ctx->saved_data["comm"].toInt(), ctx->saved_data["meter"].toInt()};
    return {summed(g, grads[0]), torch::Tensor(), torch::Tensor()};
  }
};

// Summed over the group forward; identity backward.
class ReduceFromRegion : public torch::autograd::Function<ReduceFromRegion> {
 public:
  static torch::Tensor forward(AutogradContext*, const torch::Tensor& x, int64_t comm, int64_t meter) {
    return summed(RegionGroup{comm, meter}, x);
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

models::TpRegion make_tp_region(comm::Communicator& tp, TpCommMeter* meter) {
  models::TpRegion r;
  r.size = tp.size();
  r.rank = tp.rank();
  if (r.size == 1) {
    r.copy_in = [](const torch::Tensor& x) { return x; };
    r.reduce_out = [](const torch::Tensor& x) { return x; };
    return r;
  }
  const auto comm = static_cast<int64_t>(reinterpret_cast<std::intptr_t>(&tp));
  const auto m = static_cast<int64_t>(reinterpret_cast<std::intptr_t>(meter));
  r.copy_in = [comm, m](const torch::Tensor& x) { return CopyToRegion::apply(x, comm, m); };
  r.reduce_out = [comm, m](const torch::Tensor& x) { return ReduceFromRegion::apply(x, comm, m); };
  return r;
}

}  // namespace dtbench::layout
