// `ddp`: the library's own DDP core, c10d::Reducer, driven the way PyTorch's
// DistributedDataParallel drives it: initial parameters and buffers
// broadcast with c10d::broadcast_coalesced, DDP's bucket assignment (first
// bucket 1 MiB by default), prepare_for_forward + rebuild_buckets before each
// forward, buffers broadcast before each forward, prepare_for_backward after
// it. The Reducer's autograd hooks launch bucket allreduces during backward
// and its final callback waits for them, so its communication wait is part
// of the backward time. With --trace a C++ communication hook runs the very
// allreduce the Reducer would run (the same 1/world scaling of the bucket,
// the same process group) and stamps its launch and completion.
#include <unordered_map>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/torch.h>

#include "compat/reducer_compat.h"
#include "core/error.h"
#include "train/strategies.h"
#include "train/wire_cast.h"

namespace dtbench::train {
namespace {

// The Reducer's own allreduce, observed. Without a hook the Reducer
// multiplies each gradient by 1/world while copying it into the bucket and
// sums; with a hook it copies, so the hook multiplies the bucket by the
// same float scalar (bitwise the same result: ddp_equivalence checks it).
class ObservedAllreduceHook : public c10d::CommHookInterface {
 public:
  ObservedAllreduceHook(c10::intrusive_ptr<c10d::ProcessGroup> group, trace::TrainObserver& observer,
                        const std::vector<torch::Tensor>& params)
      : group_(std::move(group)), observer_(observer) {
    for (std::size_t i = 0; i < params.size(); ++i) index_[params[i].unsafeGetTensorImpl()] = i;
  }

  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    auto& buffer = bucket.getBufferRef();
    buffer.mul_(1.0 / group_->getSize());
    std::vector<std::size_t> params;
    for (const auto& p : bucket.getParameters()) {
      const auto it = index_.find(p.unsafeGetTensorImpl());
      if (it != index_.end()) params.push_back(it->second);
    }
    const int index = static_cast<int>(bucket.getIndex());
    observer_.collective_launch(index, buffer.numel() * static_cast<int64_t>(buffer.element_size()),
                                wire_dtype_of(buffer), params);
    std::vector<torch::Tensor> tensors{buffer};
    auto future = group_->allreduce(tensors)->getFuture();
    observer_.collective_returned(index);
    // The Reducer waits for the future returned here: a continuation, so
    // the completion is stamped before the Reducer sees the bucket done (a
    // future wakes its waiters before it runs its callbacks).
    return future->then(
        [o = &observer_, index](c10::ivalue::Future& done) {
          o->collective_done(index);
          return done.value();
        },
        future->elementType());
  }

  torch::Tensor parseHookResult(const c10::IValue& result) override {
    return result.isTensor() ? result.toTensor() : result.toTensorVector()[0];
  }

 private:
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  trace::TrainObserver& observer_;
  std::unordered_map<const void*, std::size_t> index_;
};

class DdpReducer : public Strategy {
 public:
  DdpReducer(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
             trace::TrainObserver& observer)
      : Strategy(module.parameters()), group_(comm.c10d_group()), buffers_(module.buffers()),
        broadcast_buffers_(opts.broadcast_buffers), observer_(observer) {
    if (!group_)
      throw UsageError(fmt::format(
          "--reducer ddp needs a c10d process group, which the {} backend does not provide in "
          "this build; use --backend gloo, or --reducer overlap/sync",
          comm.backend()));
    const auto& params = params_;
    {
      torch::NoGradGuard no_grad;
      std::vector<torch::Tensor> state(params.begin(), params.end());
      state.insert(state.end(), buffers_.begin(), buffers_.end());
      c10d::broadcast_coalesced(group_, state, kBroadcastBytes, 0);
    }
    const auto cap = static_cast<int64_t>(mib_to_bytes(opts.bucket_cap_mb));
    const auto first = static_cast<int64_t>(mib_to_bytes(opts.first_bucket_cap_mb));
    assignment_ = compat::ddp_bucket_assignment(params, first, cap);
    reducer_ = compat::make_reducer(params, assignment_, group_, cap, first);
    if (observer_.active())
      reducer_->register_comm_hook(std::make_unique<ObservedAllreduceHook>(group_, observer_, params));
  }

  std::string name() const override { return "ddp"; }
  // The split the Reducer reduces with now: after the first iteration it
  // rebuilds its buckets in the order the gradients became ready (1.13 and
  // 2.x alike), so the timed iterations use that one, not the initial one.
  std::vector<std::vector<size_t>> buckets() const override {
    std::unordered_map<const void*, std::size_t> index;
    for (std::size_t i = 0; i < params_.size(); ++i) index[params_[i].unsafeGetTensorImpl()] = i;
    std::vector<std::vector<size_t>> out;
    for (const auto& b : reducer_->get_grad_buckets(/*return_zero_tensors=*/false)) {
      std::vector<size_t> idx;
      for (const auto& p : b.getParameters()) idx.push_back(index.at(p.unsafeGetTensorImpl()));
      out.push_back(std::move(idx));
    }
    return out.empty() ? assignment_.indices : out;
  }

  void before_forward() override {
    reducer_->prepare_for_forward();
    reducer_->rebuild_buckets();
    if (broadcast_buffers_ && !buffers_.empty()) {
      trace::PhaseScope scope(observer_, trace::Phase::kBroadcast);
      torch::NoGradGuard no_grad;
      c10d::broadcast_coalesced(group_, buffers_, kBroadcastBytes, 0);
    }
  }
  void before_backward(const torch::Tensor&) override { reducer_->prepare_for_backward({}); }
  bool sync_buffers() override {
    if (!broadcast_buffers_ || buffers_.empty()) return false;
    torch::NoGradGuard no_grad;
    c10d::broadcast_coalesced(group_, buffers_, kBroadcastBytes, 0);
    return true;
  }

 private:
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  std::vector<torch::Tensor> buffers_;
  bool broadcast_buffers_;
  trace::TrainObserver& observer_;
  compat::BucketAssignment assignment_;
  std::unique_ptr<c10d::Reducer> reducer_;
};

}  // namespace

std::unique_ptr<Strategy> make_ddp_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                              comm::Communicator& comm,
                                              trace::TrainObserver& observer) {
  return std::make_unique<DdpReducer>(opts, module, comm, observer);
}

}  // namespace dtbench::train
