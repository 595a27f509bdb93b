#include <fmt/format.h>
#include <torch/torch.h>

#include "compat/reducer_compat.h"
#include "core/error.h"
#include "train/grad_buckets.h"
#include "train/optimizer.h"
#include "train/strategies.h"
#include "train/replicas.h"
#include "train/shard_buckets.h"

namespace dtbench::train {
namespace {

// `none`: no synchronisation at all (the single-process baseline).
class NoReducer : public Strategy {
 public:
  explicit NoReducer(torch::nn::Module& module) : Strategy(module.parameters()) {}
  std::string name() const override { return "none"; }
};

}  // namespace

std::size_t mib_to_bytes(double mib) { return static_cast<std::size_t>(mib * 1024.0 * 1024.0); }

std::vector<std::vector<size_t>> bucket_assignment(const std::vector<torch::Tensor>& params,
                                                   const TrainOptions& opts) {
  return compat::ddp_bucket_assignment(params, mib_to_bytes(opts.first_bucket_cap_mb),
                                       mib_to_bytes(opts.bucket_cap_mb))
      .indices;
}

void sync_initial_state(comm::Communicator& comm, const std::vector<torch::Tensor>& params,
                        const std::vector<torch::Tensor>& buffers) {
  std::vector<torch::Tensor> all(params.begin(), params.end());
  all.insert(all.end(), buffers.begin(), buffers.end());
  broadcast_coalesced(comm, all, kBroadcastBytes, 0);
}

void broadcast_buffers(comm::Communicator& comm, const std::vector<torch::Tensor>& buffers) {
  if (!buffers.empty()) broadcast_coalesced(comm, buffers, kBroadcastBytes, 0);
}

std::vector<std::vector<size_t>> per_tensor_assignment(std::size_t num_params) {
  std::vector<std::vector<size_t>> out;
  for (std::size_t i = num_params; i-- > 0;) out.push_back({i});
  return out;
}

StateSync::StateSync(const TrainOptions& opts, torch::nn::Module& module, comm::Communicator& comm,
                     trace::TrainObserver& observer)
    : comm_(comm), observer_(observer), buffers_(module.buffers()),
      broadcast_buffers_(opts.broadcast_buffers) {
  sync_initial_state(comm_, module.parameters(), buffers_);
}

void StateSync::before_forward() {
  if (!broadcast_buffers_ || buffers_.empty()) return;
  trace::PhaseScope scope(observer_, trace::Phase::kBroadcast);
  broadcast_buffers(comm_, buffers_);
}

bool StateSync::sync_buffers() {
  if (!broadcast_buffers_ || buffers_.empty()) return false;
  broadcast_buffers(comm_, buffers_);
  return true;
}

BucketedReducer::BucketedReducer(const TrainOptions& opts, torch::nn::Module& module,
                                 comm::Communicator& comm, trace::TrainObserver& observer,
                                 bool per_tensor)
    : Strategy(module.parameters()), state_(opts, module, comm, observer) {
  buckets_ = std::make_unique<GradBuckets>(
      params_,
      per_tensor ? per_tensor_assignment(params_.size()) : bucket_assignment(params_, opts), comm,
      parse_compression(opts.compression), observer);
}

void BucketedReducer::set_compression_probe(bool on) { buckets_->set_probe(on); }

CompressionStats BucketedReducer::compression_stats() const { return buckets_->stats(); }

BucketedReducer::~BucketedReducer() = default;

std::vector<std::vector<size_t>> BucketedReducer::buckets() const { return buckets_->assignment(); }

void BucketedReducer::before_forward() { state_.before_forward(); }
bool BucketedReducer::sync_buffers() { return state_.sync_buffers(); }

ShardedStrategy::ShardedStrategy(const TrainOptions& opts, torch::nn::Module& module,
                                 comm::Communicator& comm, trace::TrainObserver& observer,
                                 bool grads_as_bucket_views)
    : Strategy(module.parameters()), state_(opts, module, comm, observer) {
  shards_ = std::make_unique<ShardBuckets>(
      params_, bucket_assignment(params_, opts), comm,
      grads_as_bucket_views ? ShardBuckets::Grads::kBucketViews : ShardBuckets::Grads::kShardOnly,
      observer);
}

ShardedStrategy::~ShardedStrategy() = default;

std::vector<std::vector<size_t>> ShardedStrategy::buckets() const { return shards_->assignment(); }

std::vector<torch::Tensor> ShardedStrategy::optimizer_parameters() const { return shards_->shards(); }

void ShardedStrategy::before_forward() { state_.before_forward(); }
bool ShardedStrategy::sync_buffers() { return state_.sync_buffers(); }

void ShardedStrategy::step(Optimizer& optimizer) {
  optimizer.step();
  shards_->gather_parameters();
}

void ShardedStrategy::zero_grad(Optimizer&) { shards_->zero_grads(); }

std::unique_ptr<Strategy> make_strategy(const TrainOptions& opts, torch::nn::Module& module,
                                        comm::Communicator* comm, trace::TrainObserver& observer,
                                        models::UnitSeam* units) {
  if (opts.reducer == "none") return std::make_unique<NoReducer>(module);
  if (comm == nullptr)
    throw UsageError(fmt::format("--reducer {} needs a communicator", opts.reducer));
  if (opts.reducer == "ddp") return make_ddp_strategy(opts, module, *comm, observer);
  if (opts.reducer == "overlap") return make_overlap_strategy(opts, module, *comm, observer);
  if (opts.reducer == "sync") return make_sync_strategy(opts, module, *comm, false, observer);
  if (opts.reducer == "allreduce-after-backward")
    return make_sync_strategy(opts, module, *comm, true, observer);
  if (opts.reducer == "horovod") return make_horovod_strategy(opts, module, *comm, observer);
  if (opts.reducer == "zero1") return make_zero1_strategy(opts, module, *comm, observer);
  if (opts.reducer == "zero2") return make_zero2_strategy(opts, module, *comm, observer);
  if (opts.reducer == "fsdp") return make_fsdp_strategy(opts, module, *comm, observer, units);
  throw UsageError(fmt::format("--reducer '{}' is not one of {}", opts.reducer, reducer_names()));
}

void Strategy::step(Optimizer& optimizer) { optimizer.step(); }

void Strategy::zero_grad(Optimizer& optimizer) { optimizer.zero_grad(!grads_are_bucket_views()); }


}  // namespace dtbench::train
