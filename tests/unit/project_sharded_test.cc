// `dtbench project` for the sharded strategies on literal inputs: the ring
// all_gather / reduce_scatter cost, memory per rank by strategy (ZeRO's
// model-state formulas and what each holds beside them), the largest batch
// that fits, the zero1/zero2/fsdp iteration schedules worked by hand, and
// what the projection refuses.
#include <gtest/gtest.h>

#include "core/error.h"
#include "project/collective_model.h"
#include "project/comm_fit.h"
#include "project/memory_model.h"
#include "project/projection.h"
#include "project/sharded_time.h"
#include "project/strategies.h"

namespace dtbench::project {
namespace {

TEST(ShardCollective, RingOnOneAndTwoLevels) {
  Network n;
  n.ranks_per_node = 1;
  n.inter = {1e-5, 1e9, {}, "", {}};
  n.intra.bus_bw = 1e12;
  EXPECT_DOUBLE_EQ(ring_shard_collective_seconds(n, 4e6, 1, ShardCollective::kAllGather), 0.0);
  // 3 steps, 3/4 of the bytes each rank sends.
  EXPECT_NEAR(ring_shard_collective_seconds(n, 4e6, 4, ShardCollective::kAllGather), 3e-5 + 3e-3, 1e-12);
  // Half an allreduce's steps and bytes.
  EXPECT_NEAR(2 * ring_shard_collective_seconds(n, 4e6, 4, ShardCollective::kAllGather), ring_allreduce_seconds(n, 4e6, 4), 1e-12);
  // Two ranks per node, two nodes: 2 steps inside, 1 across, bytes at the slower level.
  n.ranks_per_node = 2;
  n.intra = {1e-6, 1e10, {}, "", {}};
  n.base_latency_s = 5e-6;
  EXPECT_NEAR(ring_shard_collective_seconds(n, 4e6, 4, ShardCollective::kAllGather), 5e-6 + 2e-6 + 1e-5 + 3e-3, 1e-12);
}

// A measured all_gather sweep (4 ranks, one node): fitted with N-1 steps and
// (N-1)/N of the bytes, it reproduces its own times, and replaces the
// level's figures for gathers only (reduce-scatters keep the allreduce's).
TEST(ShardCollective, MeasuredSweepsServeTheirOwnCollective) {
  std::vector<MeasuredPoint> pts;
  for (double s : {1e3, 1e5, 1e7}) pts.push_back({s, 3 * 50e-6 + s * 0.75 / 0.5e9});
  Network n;
  n.ranks_per_node = 4;
  n.intra.bus_bw = 1e9;
  n.intra.latency_s = 1e-6;
  n.all_gather.intra = fit_level(pts, 4, "ag", "allgather");
  EXPECT_NEAR(n.all_gather.intra->seconds_per_byte(1e7), 2e-9, 1e-12);  // the latency takes the smallest size's transfer
  for (const auto& p : pts)
    EXPECT_NEAR(ring_shard_collective_seconds(n, p.bytes, 4, ShardCollective::kAllGather), p.seconds, 1e-12);
  EXPECT_NEAR(ring_shard_collective_seconds(n, 1e7, 4, ShardCollective::kReduceScatter), 3e-6 + 0.75e-2, 1e-12);
  // The same sweep read as an allreduce would have 6 steps and twice the bytes.
  EXPECT_NEAR(fit_level(pts, 4, "ar").seconds_per_byte(1e7), 1e-9, 1e-12);
  EXPECT_THROW(fit_level({{1e3, 1e-5}}, 4, "ag", "allgather"), UsageError);
}

TEST(Strategy, NamesAndLists) {
  EXPECT_EQ(parse_strategies("ddp,fsdp"), (std::vector<Strategy>{Strategy::kDdp, Strategy::kFsdp}));
  EXPECT_STREQ(strategy_name(parse_strategy("zero2")), "zero2");
  EXPECT_THROW(parse_strategy("zero3"), UsageError);
  EXPECT_THROW(parse_strategies("ddp,ddp"), UsageError);
  EXPECT_THROW(parse_strategies(""), UsageError);
}

TEST(MemoryModel, ModelStatesAreZerosFormulas) {
  const double psi = 1e9, n = 8;
  MemoryOptions o;
  o.optimizer_states = 2;  // AdamW
  o.bucket_cap_bytes = 25.0 * 1024 * 1024;
  const FsdpUnitSizes units{2e8, 1e8};  // the root, the largest block
  auto at = [&](Strategy s) { return memory_per_rank(s, psi, units, 8, o, 0); };
  EXPECT_DOUBLE_EQ(at(Strategy::kDdp).model_states(), 16 * psi);
  EXPECT_DOUBLE_EQ(at(Strategy::kZero1).model_states(), 8 * psi + 8 * psi / n);
  EXPECT_DOUBLE_EQ(at(Strategy::kZero2).model_states(), 4 * psi + 12 * psi / n);
  EXPECT_DOUBLE_EQ(at(Strategy::kFsdp).model_states(), 16 * psi / n);
  // Beside them: DDP's bucket copies, ZeRO-1's shard, ZeRO-2's two buckets,
  // FSDP's gathered units — the root, kept gathered, and two blocks (float32)
  // — and their unsharded gradients: (2e8 + 2 x 1e8) x (4 + 4).
  EXPECT_DOUBLE_EQ(at(Strategy::kDdp).buffers, 4 * psi);
  EXPECT_DOUBLE_EQ(at(Strategy::kZero1).buffers, 4 * psi / n);
  EXPECT_DOUBLE_EQ(at(Strategy::kZero2).buffers, 2 * o.bucket_cap_bytes);
  EXPECT_DOUBLE_EQ(at(Strategy::kFsdp).gathered, 4e8 * 4 + 4e8 * 4);
  o.param_bytes = 2;  // bf16 units
  EXPECT_DOUBLE_EQ(at(Strategy::kFsdp).gathered, 4e8 * 2 + 4e8 * 4);
  o.reshard_after_forward = false;  // every unit kept from forward to backward
  EXPECT_DOUBLE_EQ(at(Strategy::kFsdp).gathered, psi * 2 + 4e8 * 4);
  // llama3-8b's units: the root (two 128,256 x 4,096 embeddings and the final
  // norm) 1,050,677,248 elements, a block 218,112,000. Gathered at the peak:
  // (1,050,677,248 + 2 x 218,112,000) = 1,486,901,248 elements x (4 + 4) B
  // = 11,895,209,984 B in float32, x (2 + 4) = 8,921,407,488 B with bf16
  // parameters; two roots (the largest unit twice) were 4.58 / 3.43 GiB more.
  o.reshard_after_forward = true;
  const FsdpUnitSizes llama_units{1050677248.0, 218112000.0};
  o.param_bytes = 4;
  EXPECT_DOUBLE_EQ(memory_per_rank(Strategy::kFsdp, 8030261248.0, llama_units, 64, o, 0).gathered, 11895209984.0);
  o.param_bytes = 2;
  EXPECT_DOUBLE_EQ(memory_per_rank(Strategy::kFsdp, 8030261248.0, llama_units, 64, o, 0).gathered, 8921407488.0);
  // A tiny model: ZeRO-2's buckets are never more than its gradients.
  EXPECT_DOUBLE_EQ(memory_per_rank(Strategy::kZero2, 1000, {}, 2, o, 0).buffers, 4000);
  // ddp's gradients are set to none by zero_grad and made in backward: its
  // peak with 9 GB of activations (the start of backward: 25 GB, over the
  // step's 24Ψ = 24 GB) holds the buckets, not them.
  const auto m = memory_per_rank(Strategy::kDdp, psi, {}, 1, o, 9e9);
  EXPECT_DOUBLE_EQ(m.made_in_backward, 4 * psi);
  EXPECT_DOUBLE_EQ(m.total(), 12 * psi + 4 * psi + 9e9);
  EXPECT_DOUBLE_EQ(memory_per_rank(Strategy::kHorovod, psi, {}, 1, o, 0).made_in_backward, 4 * psi);
  // After backward, in the step, ddp holds every model state, its buckets
  // (c10d's Reducer keeps them) and AdamW's sqrt(v): 4 + 4 + 8 + 4 + 4 =
  // 24Ψ. Measured (docs/PERFORMANCE.md, sharded strategies beside the peers):
  // GPT-2 of Ψ = 17,329,152, 2 ranks, ddp + AdamW peaks at 415,916,048 B =
  // 24Ψ + 16,400 B; of Ψ = 790,016 at 18,964,496 B = 24Ψ + 4,112 B. With SGD
  // (steps in place) 16Ψ: an MLP of Ψ = 3,124,200 at batch 1 peaks at
  // 49,995,408 B = 16Ψ + 8,208 B.
  EXPECT_DOUBLE_EQ(memory_per_rank(Strategy::kDdp, psi, {}, 1, o, 0).total(), 24 * psi);
  MemoryOptions sgd = o;
  sgd.optimizer_states = 1;
  EXPECT_DOUBLE_EQ(memory_per_rank(Strategy::kDdp, 3124200, {}, 1, sgd, 0).total(), 16 * 3124200.0);
  // llama3-8b (Ψ = 8,030,261,248), AdamW, 10 GiB of activations: at the
  // start of backward 12Ψ + 4Ψ of buckets + 10 GiB = 128,484,179,968 +
  // 10,737,418,240 = 139,221,598,208 B (129.66 GiB, under 140 GiB); in the
  // step 24Ψ = 192,726,269,952 B (179.49 GiB): the peak, over 140 GiB.
  const double llama = 8030261248.0;
  const auto l = memory_per_rank(Strategy::kDdp, llama, {}, 8, o, 10.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(l.beside_activations() + l.activations, 139221598208.0);
  EXPECT_DOUBLE_EQ(l.total(), 192726269952.0);
  EXPECT_GT(l.total(), 140.0 * (1 << 30));
  // horovod's fusion buffer likewise: 20Ψ + 128 MiB in the step.
  EXPECT_DOUBLE_EQ(memory_per_rank(Strategy::kHorovod, psi, {}, 1, o, 0).total(), 20 * psi + 134217728.0);
  // The sharded strategies' step makes sqrt(v) of their shard only.
  EXPECT_DOUBLE_EQ(at(Strategy::kZero2).step_temporaries, 4 * psi / n);
  EXPECT_DOUBLE_EQ(at(Strategy::kZero1).after_backward(), 8 * psi + 8 * psi / n + 4 * psi / n + 4 * psi / n);
  // fsdp's gradient shards are made during backward: its backward peak is
  // without them, and with small activations the peak is after backward.
  o.reshard_after_forward = true;
  o.param_bytes = 4;
  const auto f = memory_per_rank(Strategy::kFsdp, psi, units, 8, o, 1e9);
  EXPECT_DOUBLE_EQ(f.made_in_backward, 4 * psi / n);
  EXPECT_DOUBLE_EQ(f.total(), 12 * psi / n + 8 * 4e8 + 1e9);
  const auto one = memory_per_rank(Strategy::kFsdp, psi, units, 1, o, 0);
  EXPECT_DOUBLE_EQ(one.total(), 20 * psi);  // 4Ψ of gradients and AdamW's 4Ψ outweigh 3.2 GB of units
  // zero2's gradient shards likewise (made by each bucket's reduction);
  // zero1's gradients are its buckets' views, kept.
  EXPECT_DOUBLE_EQ(at(Strategy::kZero2).made_in_backward, at(Strategy::kZero2).gradients);
  EXPECT_DOUBLE_EQ(at(Strategy::kZero1).made_in_backward, 0);
}

TEST(MemoryModel, LargestBatchThatFits) {
  MemoryFigures m;
  m.parameters = 10;
  m.activations = 8;  // at batch 4: 2 per example
  EXPECT_EQ(largest_batch(m, 4, 20), 5);
  EXPECT_EQ(largest_batch(m, 4, 11.9), 0);
  m.activations = 0;
  EXPECT_EQ(largest_batch(m, 4, 20), -1);
  // fsdp: gradients made in backward leave room for activations; the states
  // must still fit after backward.
  m.gradients = 6;
  m.made_in_backward = 6;
  m.activations = 8;
  EXPECT_EQ(largest_batch(m, 4, 20), 5);
  EXPECT_EQ(largest_batch(m, 4, 15.9), 0);
  // ddp: the buckets kept after backward must fit beside every model state
  // (16 + 5 > 20.5: none fits, though backward's start would have room).
  m.kept_buffers = m.buffers = 5;
  EXPECT_EQ(largest_batch(m, 4, 20.5), 0);
  EXPECT_EQ(largest_batch(m, 4, 21), 3);  // (21 - 15) / 2, and 21 fits after backward
  EXPECT_EQ(largest_batch(m, 4, 25), 5);  // (25 - 15) / 2
}

ComputeProfile profile_for_schedules() {
  ComputeProfile p;
  p.source = "test";
  p.batch_per_rank = 2;
  p.forward_s = 1;
  p.backward_s = 2;
  p.optimizer_s = 0.8;
  return p;
}

TEST(ShardedTime, ZeroStagesByHand) {
  const auto p = profile_for_schedules();
  const std::vector<Bucket> buckets{{100, 1.0}, {100, 2.0}};
  const auto cost = [](double) { return 0.5; };
  // zero1: both reduce_scatters after backward (2.5, 3.0), the step on a
  // quarter (3.2), both all_gathers (3.7, 4.2), after forward's 1 s.
  const auto z1 = zero_time(Strategy::kZero1, p, buckets, cost, cost, 4, true);
  EXPECT_DOUBLE_EQ(z1.iteration_s, 5.2);
  EXPECT_DOUBLE_EQ(z1.exposed_s, 2.0);
  EXPECT_DOUBLE_EQ(z1.comm_s, 2.0);
  EXPECT_EQ(z1.collectives, 4);
  // zero2: each reduce_scatter when its bucket is ready (1-1.5, 2-2.5), so
  // only the last half second is exposed before the step.
  const auto z2 = zero_time(Strategy::kZero2, p, buckets, cost, cost, 4, true);
  EXPECT_DOUBLE_EQ(z2.iteration_s, 4.7);
  EXPECT_DOUBLE_EQ(z2.exposed_s, 1.5);
  EXPECT_EQ(z2.collectives, 4);
  // Without overlap zero2 is zero1.
  EXPECT_DOUBLE_EQ(zero_time(Strategy::kZero2, p, buckets, cost, cost, 4, false).iteration_s, 5.2);
  // Reductions as allreduces (twice the time here): only they grow.
  const auto twice = [](double) { return 1.0; };
  EXPECT_DOUBLE_EQ(zero_time(Strategy::kZero1, p, buckets, cost, twice, 4, true).iteration_s, 6.2);
}

TEST(ShardedTime, FsdpByHand) {
  const auto p = profile_for_schedules();
  // The root (0.2 of the compute: the head) and two blocks (0.4 each).
  const std::vector<UnitWork> units{{100, 0.2}, {100, 0.4}, {100, 0.4}};
  const auto cost = [](double) { return 0.1; };
  // Forward: root 0-0.1, block 1 0.1-0.2 (prefetched), computes 0.2-0.6
  // while block 2 gathers (0.2-0.3), block 2 computes 0.6-1.0, the head
  // 1.0-1.2. Backward: the head 1.2-1.6; block 2 gathered 1.6-1.7,
  // computes 1.7-2.5 while block 1 gathers 1.7-1.8; reduce 2.5-2.6; block
  // 1 computes 2.5-3.3, reduce 3.3-3.4, the root's reduce 3.4-3.5; the
  // step on half: 0.4.
  const auto f = fsdp_time(p, units, cost, cost, 2, true, 4, 4);
  EXPECT_NEAR(f.iteration_s, 3.9, 1e-12);
  EXPECT_NEAR(f.exposed_s, 0.5, 1e-12);
  EXPECT_NEAR(f.comm_s, 0.8, 1e-12);
  EXPECT_EQ(f.collectives, 8);
  // Kept from forward: no gathers in backward; the reduces end at 2.5,
  // 3.3, 3.4.
  const auto k = fsdp_time(p, units, cost, cost, 2, false, 4, 4);
  EXPECT_NEAR(k.iteration_s, 3.8, 1e-12);
  EXPECT_EQ(k.collectives, 6);
  // Bytes: gathered in the parameter dtype, reduced in float32.
  double gathered = 0, reduced = 0;
  const auto gathered_bytes = [&](double b) {
    gathered += b;
    return 0.0;
  };
  const auto reduced_bytes = [&](double b) {
    reduced += b;
    return 0.0;
  };
  fsdp_time(p, units, gathered_bytes, reduced_bytes, 2, true, 2, 4);
  EXPECT_DOUBLE_EQ(gathered, 5 * 200);
  EXPECT_DOUBLE_EQ(reduced, 3 * 400);
}

// zero2 holds a bucket filling and the one before it reducing, whole: a
// gradient item above the cap is a bucket of its own. Items (bytes, ready):
// 300e6 fills the first bucket (1 MiB cap) alone, three of 10e6 the second
// (30e6 >= 25 MiB), 50e6 the third: the most two adjacent buckets hold is
// 300e6 + 30e6 = 330e6, under 4 Psi = the 380e6 of gradients; two caps
// would say 52,428,800.
TEST(ShardedProjection, Zero2HoldsTwoWholeBuckets) {
  auto p = profile_for_schedules();
  p.grads = {{300e6, 0.5}, {10e6, 1.0}, {10e6, 1.5}, {10e6, 2.0}, {50e6, 2.5}};
  p.parameters = 0;  // Psi from the gradients: 95e6
  ProjectOptions o;
  o.net.intra = {1e-6, 1e11, {}, "", {}};
  o.world_sizes = {4};
  o.strategy = Strategy::kZero2;
  const auto rows = project(p, o);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].buckets, 3);
  EXPECT_DOUBLE_EQ(rows[0].memory.buffers, 330e6);
  o.memory.zero2_live_bucket_bytes = 1e6;  // stated: taken as it is
  EXPECT_DOUBLE_EQ(project(p, o)[0].memory.buffers, 1e6);
}

// A 1-rank row of the strategy calibrates its activations as its peak less
// what backward holds beside them, only where the peak was backward's.
// zero2 with AdamW, Psi = 2e8 (two items of 4e8 bytes, each a bucket): at
// one rank parameters 8e8, gradients 8e8 (made in backward), AdamW's states
// 16e8, buckets 8e8: backward holds 3.2e9 beside the activations; the
// step's moment holds the 3.2e9 of model states and sqrt(v), 8e8: 4.0e9. A
// row peaking at 4.0e9 peaked in the step (its activations could be
// anything up to 8e8): the profile's 1e8 stay. At 4.5e9 the peak was
// backward's: 1.3e9 of activations.
TEST(ShardedProjection, CalibratesActivationsOnlyFromABackwardPeak) {
  auto p = profile_for_schedules();
  p.grads = {{4e8, 1.0}, {4e8, 2.0}};
  p.activation_bytes = 1e8;
  ProjectOptions o;
  o.net.intra = {1e-6, 1e11, {}, "", {}};
  o.world_sizes = {1};
  o.strategy = Strategy::kZero2;
  o.memory.optimizer_states = 2;
  p.one_rank = {{"zero2", 1, 3.5, 4.0e9, 2, 0}};
  auto row = project(p, o)[0];
  EXPECT_DOUBLE_EQ(row.memory.beside_activations(), 3.2e9);
  EXPECT_DOUBLE_EQ(row.memory.after_backward(), 4.0e9);
  EXPECT_DOUBLE_EQ(row.memory.activations, 1e8);
  EXPECT_NE(row.activations_from.find("may have peaked in the optimizer's step"), std::string::npos) << row.activations_from;
  p.one_rank = {{"zero2", 1, 3.5, 4.5e9, 2, 0}};
  row = project(p, o)[0];
  EXPECT_DOUBLE_EQ(row.memory.activations, 1.3e9);
  EXPECT_EQ(row.activations_from, "1-rank zero2 row");
}

TEST(ShardedProjection, RowsMemoryAndRefusals) {
  auto p = profile_for_schedules();
  p.grads = {{4e8, 1.0}, {4e8, 2.0}};
  p.activation_bytes = 1e9;
  ProjectOptions o;
  o.net.ranks_per_node = 8;
  o.net.intra = {1e-6, 1e11, {}, "", {}};
  o.world_sizes = {1, 8};
  o.memory_limit = 4e9;
  o.strategy = Strategy::kZero2;
  const auto rows = project(p, o);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].strategy, "zero2");
  EXPECT_DOUBLE_EQ(rows[1].memory.model_states(), 8e8 + (8e8 + 8e8) / 8);  // Ψ = 2e8, K = 1
  ASSERT_TRUE(rows[1].fits.has_value());
  EXPECT_EQ(*rows[1].fits, rows[1].memory.total() <= 4e9);
  EXPECT_GT(rows[1].largest_batch, 0);
  // Eight ranks step an eighth each, and communicate.
  EXPECT_GT(rows[1].iteration_s, 1 + 2 + 0.8 / 8);
  EXPECT_GT(rows[1].exposed_s, 0);
  EXPECT_DOUBLE_EQ(rows[0].iteration_s, 1 + 2 + 0.8);  // one rank: no communication, the whole step
  o.strategy = Strategy::kFsdp;
  EXPECT_THROW(project(p, o), UsageError);  // no units
  p.units = {{1e8, 0.5}, {1e8, 0.5}};
  EXPECT_NO_THROW(project(p, o));
  o.wire_ratio = 0.5;
  EXPECT_THROW(project(p, o), UsageError);  // compression
  o.wire_ratio = 1;
  o.cores_per_node = 2;
  EXPECT_THROW(project(p, o), UsageError);  // contention: ddp only
}

}  // namespace
}  // namespace dtbench::project
