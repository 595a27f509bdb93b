// Training checks beside the equivalence (same program as
// ddp_equivalence_test.cc, whose main() runs them): --trace changes nothing
// it observes and sees every bucket, Horovod's timeline stages per fused
// group, batch-norm buffers kept identical, channels-last training, --amp's
// autocast moving the loss by a rounding only, and the replica check itself
// (coalesced broadcasts, a corrupted rank caught).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/torch.h>

#include "comm/communicator.h"
#include "comm/factory.h"
#include "compat/amp_compat.h"
#include "core/error.h"
#include "launch/world.h"
#include "support/ddp_test_support.h"
#include "support/train_fixtures.h"
#include "trace/timeline.h"
#include "train/replicas.h"
#include "train/shard_buckets.h"
#include "train/trainer.h"

namespace dtbench {
namespace {

using testing::backend_has_c10d_group;
using testing::g_comm;
using testing::max_abs_diff;
using testing::params_of;

// --trace changes nothing it observes: with the timeline recorder (for ddp a
// communication hook that runs the Reducer's allreduce itself) the
// parameters are bitwise those of the run without it; and the timeline holds
// every bucket's collective, launched and completed, in every iteration.
class Observed : public ::testing::TestWithParam<std::string> {};

TEST_P(Observed, TimelineChangesNothingAndSeesEveryBucket) {
  const std::string reducer = GetParam();
  if (reducer == "ddp" && !backend_has_c10d_group())
    GTEST_SKIP() << "backend " << g_comm->backend() << " has no c10d process group";
  comm::Communicator& c = *g_comm;
  auto opts = testing::small_mlp_options(reducer);
  opts.bucket_cap_mb = 0.01;  // several buckets
  opts.first_bucket_cap_mb = 0.01;
  auto plain = train::make_seeded_model(opts);
  train::train(opts, *plain, &c, c.size(), c.rank());
  trace::Timeline timeline(0, opts.warmup + opts.iters);
  auto observed = train::make_seeded_model(opts);
  const auto result = train::train(opts, *observed, &c, c.size(), c.rank(), {}, timeline);
  const auto a = params_of(*plain), b = params_of(*observed);
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_TRUE(torch::equal(a[i], b[i])) << reducer << ": parameter " << i << " differs with --trace";

  const int iterations = opts.warmup + opts.iters;
  const auto buckets = static_cast<int>(result.buckets.size());
  ASSERT_GT(buckets, 1);
  {  // every parameter in exactly one bucket
    std::multiset<std::size_t> all;
    for (const auto& b : result.buckets) all.insert(b.begin(), b.end());
    EXPECT_EQ(all.size(), a.size());
    EXPECT_EQ(std::set<std::size_t>(all.begin(), all.end()).size(), a.size());
  }
  std::map<int, std::set<int>> seen;
  int ready = 0, phases = 0;
  for (const auto& e : timeline.events()) {
    if (e.kind == trace::EventKind::kCollective) {
      EXPECT_TRUE(seen[e.iteration].insert(e.bucket).second) << "bucket twice in one iteration";
      EXPECT_GE(e.end_us, e.begin_us);
    }
    ready += e.kind == trace::EventKind::kBucketReady;
    phases += e.kind == trace::EventKind::kPhase;
  }
  EXPECT_EQ(timeline.incomplete(), 0);
  ASSERT_EQ(static_cast<int>(seen.size()), iterations);
  int launched = 0;
  for (const auto& [it, set] : seen) {
    // c10d's Reducer rebuilds its buckets after the first iteration (in the
    // order gradients became ready): their number can change once, and the
    // buckets reported are the timed iterations' (the rebuilt ones).
    if (reducer != "ddp" || it > 0) {
      EXPECT_EQ(static_cast<int>(set.size()), buckets) << "iteration " << it;
    }
    if (it > 1) {
      EXPECT_EQ(set.size(), seen[1].size()) << "iteration " << it;
    }
    EXPECT_EQ(*set.rbegin() + 1, static_cast<int>(set.size())) << "buckets 0..n-1 in iteration " << it;
    launched += static_cast<int>(set.size());
  }
  EXPECT_EQ(ready, launched);  // every bucket got its ready time
  EXPECT_GE(phases, iterations * 4);

  // The sharded strategies' parameter all-gathers: every bucket (zero1,
  // zero2: once, after the step) or unit (fsdp: before its forward, again
  // for backward where it was freed) in every iteration, each completed.
  if (reducer == "zero1" || reducer == "zero2" || reducer == "fsdp") {
    std::map<int, std::map<int, int>> gathers;  // iteration -> unit -> count
    for (const auto& e : timeline.events())
      if (e.kind == trace::EventKind::kAllGather) {
        EXPECT_GE(e.end_us, e.begin_us) << "all-gather " << e.bucket << " never completed";
        EXPECT_GT(e.bytes, 0);
        ++gathers[e.iteration][e.bucket];
      }
    ASSERT_EQ(static_cast<int>(gathers.size()), iterations) << reducer << ": iterations with all-gathers";
    for (const auto& [it, units] : gathers) {
      EXPECT_EQ(static_cast<int>(units.size()), buckets) << "iteration " << it;
      EXPECT_EQ(units.rbegin()->first + 1, static_cast<int>(units.size())) << "units 0..n-1 in iteration " << it;
      for (const auto& [unit, count] : units)
        if (reducer != "fsdp") {
          EXPECT_EQ(count, 1) << "bucket " << unit << " in iteration " << it;
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reducers, Observed,
                         ::testing::Values("ddp", "overlap", "sync", "allreduce-after-backward",
                                           "zero1", "zero2", "fsdp"),
                         [](const auto& info) {
                           return info.param == "allreduce-after-backward" ? std::string("aab")
                                                                           : info.param;
                         });

// horovod under --trace: every gradient is reduced exactly once per
// iteration, in fused groups numbered from 0 that stay within the fusion
// threshold; each group has its negotiation, and a group of several tensors
// its copies into and out of the fusion buffer, as Horovod's timeline shows
// them. The result is the untraced run's up to the rounding of a different
// grouping (groups depend on when gradients arrive within a cycle).
TEST(HorovodTimeline, EveryGradientOnceInFusedGroupsWithTheirStages) {
  comm::Communicator& c = *g_comm;
  auto opts = testing::small_mlp_options("horovod");
  auto plain = train::make_seeded_model(opts);
  train::train(opts, *plain, &c, c.size(), c.rank());
  trace::Timeline timeline(0, opts.warmup + opts.iters);
  auto observed = train::make_seeded_model(opts);
  const auto result = train::train(opts, *observed, &c, c.size(), c.rank(), {}, timeline);
  train::verify_replicas(c, *observed->module(), result.buffers_in_step);
  EXPECT_LT(max_abs_diff(params_of(*plain), params_of(*observed)), 1e-5);
  const auto params = observed->module()->parameters();
  const std::int64_t threshold = 1024 * 21;  // 0.02 MiB rounded up to 512 B x local ranks (<= 2 here)
  std::map<int, std::map<int, trace::Event>> groups;  // iteration -> group -> collective
  std::map<int, std::map<int, std::set<int>>> stages;   // iteration -> group -> stages
  for (const auto& e : timeline.events()) {
    if (e.kind == trace::EventKind::kCollective) {
      EXPECT_TRUE(groups[e.iteration].emplace(e.bucket, e).second) << "group twice in one iteration";
    }
    if (e.kind == trace::EventKind::kStage) {
      EXPECT_LE(e.begin_us, e.end_us);
      stages[e.iteration][e.bucket].insert(e.sub);
    }
  }
  EXPECT_EQ(timeline.incomplete(), 0);
  ASSERT_EQ(static_cast<int>(groups.size()), opts.warmup + opts.iters);
  std::int64_t all_bytes = 0;
  for (const auto& p : params) all_bytes += p.numel() * 4;
  int multi = 0;
  for (const auto& [it, gs] : groups) {
    std::int64_t bytes = 0;
    for (const auto& [g, e] : gs) {
      bytes += e.bytes;
      const bool fused = stages[it][g].count(static_cast<int>(trace::Stage::kMemcpyIn)) > 0;
      multi += fused;
      if (fused) {
        EXPECT_LE(e.bytes, threshold) << "a fused group over the threshold";
      }
      EXPECT_TRUE(stages[it][g].count(static_cast<int>(trace::Stage::kNegotiate))) << "group " << g;
      EXPECT_EQ(stages[it][g].count(static_cast<int>(trace::Stage::kMemcpyIn)),
                stages[it][g].count(static_cast<int>(trace::Stage::kMemcpyOut)));
    }
    EXPECT_EQ(bytes, all_bytes) << "iteration " << it << ": every gradient once";
    EXPECT_EQ(gs.rbegin()->first + 1, static_cast<int>(gs.size())) << "groups 0..n-1";
  }
  EXPECT_GT(multi, 0) << "no group fused several tensors";
  // The last iteration's groups, as the rows report them: every parameter once.
  std::vector<int> seen(params.size(), 0);
  for (const auto& g : result.buckets)
    for (auto i : g) ++seen.at(i);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(params.size()));
}

// A small ResNet-18 run on one thread.
train::TrainOptions small_resnet(const std::string& reducer, int64_t image, int64_t batch, int iters) {
  train::TrainOptions o;
  o.model = "resnet18";
  o.image_size = image;
  o.num_classes = 10;
  o.batch_size = batch;
  o.iters = iters;
  o.warmup = 0;
  o.threads = 1;
  o.reducer = reducer;
  return o;
}

class BatchNormReplicas : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchNormReplicas, ResNetReplicasStayIdentical) {
  const std::string reducer = GetParam();
  if (reducer == "ddp" && !backend_has_c10d_group())
    GTEST_SKIP() << "backend " << g_comm->backend() << " has no c10d process group";
  auto o = small_resnet(reducer, 32, 2, 2);
  o.seed = 11 + g_comm->rank();  // different initial weights: the broadcast must fix that
  auto model = train::make_seeded_model(o);
  trace::Timeline timeline(0, o.warmup + o.iters);
  const auto r = train::train(o, *model, g_comm.get(), g_comm->size(), g_comm->rank(), {}, timeline);
  // Every strategy broadcasts buffers by default: the running statistics
  // (updated by each rank's own batch in the last forward) are compared
  // after the broadcast the next forward would make (Strategy::sync_buffers).
  ASSERT_TRUE(r.buffers_in_step) << reducer << " does not keep the batch norms' buffers in step";
  EXPECT_NO_THROW(train::verify_replicas(*g_comm, *model->module(), true));
  // ... and before every forward: one broadcast phase per iteration. (In
  // training mode a batch norm normalises by the batch's statistics, so a
  // missing per-iteration broadcast changes no loss; this is where it shows.)
  std::set<int> broadcast_in;
  for (const auto& e : timeline.events())
    if (e.kind == trace::EventKind::kPhase && e.sub == static_cast<int>(trace::Phase::kBroadcast))
      broadcast_in.insert(e.iteration);
  EXPECT_EQ(static_cast<int>(broadcast_in.size()), o.warmup + o.iters) << reducer;
  // --broadcast-buffers false: nothing broadcast, buffers not compared.
  o.broadcast_buffers = false;
  auto own = train::make_seeded_model(o);
  EXPECT_FALSE(train::train(o, *own, g_comm.get(), g_comm->size(), g_comm->rank()).buffers_in_step);
}

INSTANTIATE_TEST_SUITE_P(Reducers, BatchNormReplicas,
                         ::testing::Values("ddp", "overlap", "sync", "horovod", "zero1", "zero2", "fsdp"));

// --channels-last: the same training in NHWC. Convolution weights stay
// channels-last through the reducer and the optimizer, the replicas stay
// identical, and the result matches the contiguous run up to the rounding
// of a different convolution kernel.
class ChannelsLast : public ::testing::TestWithParam<std::string> {};

TEST_P(ChannelsLast, TrainsLikeContiguousAndStaysNhwc) {
  const std::string reducer = GetParam();
  if (reducer == "ddp" && !backend_has_c10d_group())
    GTEST_SKIP() << "backend " << g_comm->backend() << " has no c10d process group";
  // 64x64 and 4 examples per rank, one iteration: the loss is the first
  // forward's (before any step), then one step is compared.
  auto o = small_resnet(reducer, 64, 4, 1);
  auto plain = train::make_seeded_model(o);
  const auto initial = params_of(*plain);
  const double loss_plain = train::train(o, *plain, g_comm.get(), g_comm->size(), g_comm->rank()).last_loss;
  o.channels_last = true;
  auto nhwc = train::make_seeded_model(o);
  const auto r_nhwc = train::train(o, *nhwc, g_comm.get(), g_comm->size(), g_comm->rank());
  const double loss_nhwc = r_nhwc.last_loss;
  EXPECT_LT(std::abs(loss_plain - loss_nhwc) / loss_plain, 1e-5) << loss_plain << " vs " << loss_nhwc;
  EXPECT_NO_THROW(train::verify_replicas(*g_comm, *nhwc->module(), r_nhwc.buffers_in_step));
  int spatial = 0;
  for (const auto& p : nhwc->module()->parameters()) {
    if (p.dim() != 4 || p.size(2) == 1) continue;  // 1x1 kernels look the same either way
    ++spatial;
    EXPECT_TRUE(p.is_contiguous(at::MemoryFormat::ChannelsLast)) << "a 3x3+ convolution weight left NHWC";
    EXPECT_FALSE(p.is_contiguous()) << "a 3x3+ convolution weight is NCHW";
  }
  EXPECT_GT(spatial, 10);
  // One SGD step. A permuted or ignored layout would differ by the size of
  // the step; float32 rounding in LibTorch's NHWC CPU kernels differs by
  // more than one would hope on this seed's data: the gradient of
  // layer2.1.conv1.weight is 9% off a float64 reference in NHWC float32
  // (3e-6 in NCHW float32, 1e-14 in NHWC float64, so the layout is right),
  // 1.0% of the largest step here. Hence 3%.
  const double step = max_abs_diff(initial, params_of(*plain));
  ASSERT_GT(step, 1e-4) << "training did not change the parameters";
  EXPECT_LT(max_abs_diff(params_of(*plain), params_of(*nhwc)), 0.03 * step) << reducer << ", step " << step;
}

INSTANTIATE_TEST_SUITE_P(Reducers, ChannelsLast, ::testing::Values("ddp", "overlap", "sync"));

// --amp runs the forward under CPU autocast (bfloat16): the loss moves by a
// bfloat16 rounding, no more. Without autocast it would be bitwise equal.
// The small MLP trained `iters` iterations in float32 and under --amp `amp`:
// the two losses must differ (autocast did something) by a rounding only.
train::TrainResult expect_amp_moves_loss_slightly(const std::string& amp, int iters) {
  auto o = testing::small_mlp_options("none");
  o.iters = iters;
  auto fp32 = train::make_seeded_model(o);
  const double loss32 = train::train(o, *fp32, nullptr, 1, 0).last_loss;
  o.amp = amp;
  auto low = train::make_seeded_model(o);
  const auto r = train::train(o, *low, nullptr, 1, 0);
  EXPECT_NE(loss32, r.last_loss) << amp << " autocast had no effect";
  EXPECT_LT(std::abs(loss32 - r.last_loss) / std::abs(loss32), 5e-2) << amp;
  return r;
}

TEST(Amp, Bf16AutocastChangesTheLossSlightly) { expect_amp_moves_loss_slightly("bf16", 1); }

// --amp fp16 (LibTorch >= 2.4): float16 autocast with the loss scaler; the
// loss moves by a float16 rounding and no step is skipped on this small MLP.
TEST(Amp, Fp16AutocastWithTheScalerChangesTheLossSlightly) {
  if (!compat::cpu_autocast_has_float16())
    GTEST_SKIP() << "LibTorch " << compat::torch_version() << " has no CPU float16 autocast";
  const auto r = expect_amp_moves_loss_slightly("fp16", 2);
  EXPECT_EQ(r.amp_skipped_steps, 0);
  EXPECT_DOUBLE_EQ(r.amp_final_scale, 65536.0);
}

// Buffers as batch norms hold them (float32 statistics and an int64 counter,
// layer after layer), different on every rank: afterwards every rank holds
// rank 1's (the root here), bit for bit, and the root's are unchanged.
TEST(ReplicaCheck, CoalescedBroadcastOfInterleavedDtypes) {
  comm::Communicator& c = *g_comm;
  const int root = c.size() > 1 ? 1 : 0;
  auto make = [](int rank) {
    std::vector<torch::Tensor> t;
    for (int layer = 0; layer < 4; ++layer) {
      t.push_back(torch::arange(5 + layer, torch::kFloat).add(100.0 * rank + layer));
      t.push_back(torch::full({3, 2}, 0.5 + rank, torch::kFloat));
      t.push_back(torch::full({}, 1000 * rank + layer, torch::kLong));
    }
    return t;
  };
  auto mine = make(c.rank());
  const auto expected = make(root);
  for (std::size_t chunk : {std::size_t{1} << 20, std::size_t{24}}) {
    train::broadcast_coalesced(c, mine, chunk, root);
    for (std::size_t i = 0; i < mine.size(); ++i)
      ASSERT_TRUE(torch::equal(mine[i], expected[i])) << "tensor " << i << ", chunks of " << chunk << " B";
    mine = make(c.rank());
  }
}

TEST(ReplicaCheck, CatchesOneCorruptedRank) {
  comm::Communicator& c = *g_comm;
  if (c.size() < 2) GTEST_SKIP() << "needs two ranks";
  auto opts = testing::small_mlp_options("none");
  auto model = train::make_seeded_model(opts);
  EXPECT_NO_THROW(train::verify_replicas(c, *model->module(), false));
  if (c.rank() == c.size() - 1) {
    torch::NoGradGuard g;
    auto p = model->module()->parameters().back();
    p.view(-1)[0].add_(1e-6);  // one element, one ulp-ish change
  }
  try {
    train::verify_replicas(c, *model->module(), false);
    ADD_FAILURE() << "a corrupted replica was not detected";
  } catch (const VerificationError& e) {
    // "rank(s) N": a bare digit could be found inside the hex hash.
    EXPECT_NE(std::string(e.what()).find("parameters of rank(s) " + std::to_string(c.size() - 1) + " "),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
// A batch norm's running mean changed on the last rank: seen with buffers
// compared, not without (--broadcast-buffers false leaves them each rank's own).
TEST(ReplicaCheck, CatchesOneRanksDifferentBuffers) {
  comm::Communicator& c = *g_comm;
  if (c.size() < 2) GTEST_SKIP() << "needs two ranks";
  auto model = train::make_seeded_model(small_resnet("none", 32, 2, 1));
  ASSERT_FALSE(model->module()->buffers().empty());
  EXPECT_NO_THROW(train::verify_replicas(c, *model->module(), true));
  if (c.rank() == c.size() - 1) {
    torch::NoGradGuard g;
    model->module()->buffers().front().view(-1)[0].add_(1e-3);
  }
  EXPECT_NO_THROW(train::verify_replicas(c, *model->module(), false));
  try {
    train::verify_replicas(c, *model->module(), true);
    ADD_FAILURE() << "a rank's different buffer was not detected";
  } catch (const VerificationError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("buffers"), std::string::npos) << what;
    EXPECT_NE(what.find("rank(s) " + std::to_string(c.size() - 1) + " "), std::string::npos) << what;
  }
}

// zero2's gradient shards (kShardOnly) exist from the reduction to
// zero_grads(), as DeepSpeed's stage 2 keeps none between steps; zero1's
// (kBucketViews) are views of its kept buckets, zeroed in place.
TEST(ShardBuckets, GradientShardsLiveFromTheReductionToZeroGrad) {
  comm::Communicator& c = *g_comm;
  for (const auto grads : {train::ShardBuckets::Grads::kShardOnly, train::ShardBuckets::Grads::kBucketViews}) {
    std::vector<torch::Tensor> params{torch::ones({5}, torch::requires_grad()),
                                      torch::ones({3}, torch::requires_grad())};
    train::ShardBuckets buckets(params, {{1, 0}}, c, grads);
    const auto& shard = buckets.shards().at(0);
    const bool shard_only = grads == train::ShardBuckets::Grads::kShardOnly;
    EXPECT_EQ(shard.grad().defined(), !shard_only) << "before any backward";
    buckets.reset();
    (params[0].sum() * 2 + params[1].sum() * 3).backward();
    EXPECT_TRUE(buckets.add_gradient(1) == false && buckets.add_gradient(0));
    buckets.launch(0);
    buckets.finish();
    ASSERT_TRUE(shard.grad().defined());
    // Every rank's gradients were equal: the average is the gradient itself,
    // bucket order (parameter 1's 3 elements, then parameter 0's 5, padded).
    const int64_t n = shard.numel(), from = c.rank() * n;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t at = from + k;
      const float want = at < 3 ? 3.0f : at < 8 ? 2.0f : 0.0f;
      EXPECT_EQ(shard.grad()[k].item<float>(), want) << "element " << at;
    }
    buckets.zero_grads();
    if (shard_only)
      EXPECT_FALSE(shard.grad().defined()) << "zero2 kept its gradient shard after zero_grad";
    else
      EXPECT_EQ(shard.grad().abs().sum().item<float>(), 0.0f);
  }
}

}  // namespace dtbench
