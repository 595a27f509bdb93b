// `sync`: dtbench's own reducer without overlap. After backward has finished,
// the same buckets as `overlap` are filled and allreduced (all launched, then
// all waited for), so the whole communication time is exposed.
// `allreduce-after-backward`: the same with one bucket per parameter — the
// naive strategy, one allreduce per gradient tensor, no bucketing.
#include <torch/torch.h>

#include "train/grad_buckets.h"
#include "train/strategies.h"

namespace dtbench::train {
namespace {

class SyncReducer : public BucketedReducer {
 public:
  SyncReducer(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
              bool per_tensor, trace::TrainObserver& observer)
      : BucketedReducer(opts, module, comm, observer, per_tensor), per_tensor_(per_tensor) {}

  std::string name() const override { return per_tensor_ ? "allreduce-after-backward" : "sync"; }
  void finish_backward() override {
    buckets_->reset();
    for (std::size_t b = 0; b < buckets_->size(); ++b) {
      buckets_->fill(b);
      buckets_->launch(b);
    }
    buckets_->finish();
  }

 private:
  bool per_tensor_;
};

}  // namespace

std::unique_ptr<Strategy> make_sync_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                               comm::Communicator& comm, bool per_tensor,
                                               trace::TrainObserver& observer) {
  return std::make_unique<SyncReducer>(opts, module, comm, per_tensor, observer);
}

}  // namespace dtbench::train
