// `sync`: dtbench's own reducer without overlap. After backward has finished,
// the same buckets as `overlap` are filled and allreduced (all launched, then
// all waited for), so the whole communication time is exposed.
#include <torch/torch.h>

#include "train/grad_buckets.h"
#include "train/reducers.h"

namespace dtbench::train {
namespace {

class SyncReducer : public GradReducer {
 public:
  SyncReducer(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm)
      : comm_(comm), params_(module.parameters()), buffers_(module.buffers()),
        broadcast_buffers_(opts.broadcast_buffers) {
    sync_initial_state(comm_, params_, buffers_);
    buckets_ = std::make_unique<GradBuckets>(params_, bucket_assignment(params_, opts), comm_);
  }

  std::string name() const override { return "sync"; }
  std::vector<std::vector<size_t>> buckets() const override { return buckets_->assignment(); }

  void before_forward() override {
    if (broadcast_buffers_) broadcast_buffers(comm_, buffers_);
  }
  void finish_backward() override {
    buckets_->reset();
    for (std::size_t b = 0; b < buckets_->size(); ++b) {
      buckets_->fill(b);
      buckets_->launch(b);
    }
    buckets_->finish();
  }

 private:
  comm::Communicator& comm_;
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> buffers_;
  bool broadcast_buffers_;
  std::unique_ptr<GradBuckets> buckets_;
};

}  // namespace

std::unique_ptr<GradReducer> make_sync_reducer(const TrainOptions& opts, torch::nn::Module& module,
                                               comm::Communicator& comm) {
  return std::make_unique<SyncReducer>(opts, module, comm);
}

}  // namespace dtbench::train
