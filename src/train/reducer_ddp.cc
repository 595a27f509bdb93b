// `ddp`: the library's own DDP core, c10d::Reducer, driven the way PyTorch's
// DistributedDataParallel drives it: initial parameters and buffers
// broadcast with c10d::broadcast_coalesced, DDP's bucket assignment (first
// bucket 1 MiB by default), prepare_for_forward + rebuild_buckets before each
// forward, buffers broadcast before each forward, prepare_for_backward after
// it. The Reducer's autograd hooks launch bucket allreduces during backward
// and its final callback waits for them, so its communication wait is part
// of the backward time.
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/torch.h>

#include "compat/reducer_compat.h"
#include "core/error.h"
#include "train/reducers.h"

namespace dtbench::train {
namespace {

class DdpReducer : public GradReducer {
 public:
  DdpReducer(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm)
      : group_(comm.c10d_group()), buffers_(module.buffers()),
        broadcast_buffers_(opts.broadcast_buffers) {
    if (!group_)
      throw UsageError(fmt::format(
          "--reducer ddp needs a c10d process group, which the {} backend does not provide in "
          "this build; use --backend gloo, or --reducer overlap/sync",
          comm.backend()));
    const auto params = module.parameters();
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
  }

  std::string name() const override { return "ddp"; }
  std::vector<std::vector<size_t>> buckets() const override { return assignment_.indices; }

  void before_forward() override {
    reducer_->prepare_for_forward();
    reducer_->rebuild_buckets();
    if (broadcast_buffers_ && !buffers_.empty()) {
      torch::NoGradGuard no_grad;
      c10d::broadcast_coalesced(group_, buffers_, kBroadcastBytes, 0);
    }
  }
  void before_backward(const torch::Tensor&) override { reducer_->prepare_for_backward({}); }

 private:
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  std::vector<torch::Tensor> buffers_;
  bool broadcast_buffers_;
  compat::BucketAssignment assignment_;
  std::unique_ptr<c10d::Reducer> reducer_;
};

}  // namespace

std::unique_ptr<GradReducer> make_ddp_reducer(const TrainOptions& opts, torch::nn::Module& module,
                                              comm::Communicator& comm) {
  return std::make_unique<DdpReducer>(opts, module, comm);
}

}  // namespace dtbench::train
