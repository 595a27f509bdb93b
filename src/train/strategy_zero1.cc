// `zero1` (ZeRO stage 1): optimizer state sharded. Every rank keeps the full
// parameters and full gradients (views of flat buckets, as `sync`); after
// backward each bucket is reduce-scattered in DDP's bucket order, so each
// rank holds the average of its shard only, steps that shard (the optimizer
// holds state for 1/N of the parameters), and the updated shards are
// all-gathered into every rank's parameters. Communication after backward is
// exposed, as with `sync`.
#include <torch/torch.h>

#include "train/shard_buckets.h"
#include "train/strategies.h"

namespace dtbench::train {
namespace {

class Zero1Strategy : public ShardedStrategy {
 public:
  Zero1Strategy(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
                trace::TrainObserver& observer)
      : ShardedStrategy(opts, module, comm, observer, /*grads_as_bucket_views=*/true) {}

  std::string name() const override { return "zero1"; }
  bool grads_are_bucket_views() const override { return true; }
  void finish_backward() override {
    shards_->reset();
    for (std::size_t b = 0; b < shards_->size(); ++b) {
      shards_->fill(b);
      shards_->launch(b);
    }
    shards_->finish();
  }
};

}  // namespace

std::unique_ptr<Strategy> make_zero1_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                              comm::Communicator& comm, trace::TrainObserver& observer) {
  return std::make_unique<Zero1Strategy>(opts, module, comm, observer);
}

}  // namespace dtbench::train
