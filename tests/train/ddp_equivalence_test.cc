// Data-parallel training is exact: on N ranks with batch B every reducer
// gives the same parameters as one process with batch N*B (to float
// tolerance) — MLP with SGD and AdamW, GPT-2 and Llama under fsdp, fsdp's
// bf16 gathers — and the replicas end bitwise identical. The same program
// also runs ddp_checks_test.cc (--trace, Horovod's timeline, batch norm,
// channels-last, AMP, the replica check). Runs inside every rank of a job
// started by `dtbench launch` (gloo) or mpirun (mpi); see tests/CMakeLists.txt.
//   ddp_equivalence_test --backend gloo|mpi
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
#include "support/comm_test_main.h"
#include "support/ddp_test_support.h"
#include "support/train_fixtures.h"
#include "trace/timeline.h"
#include "train/replicas.h"
#include "train/trainer.h"

namespace dtbench {
namespace {

using testing::backend_has_c10d_group;
using testing::g_comm;
using testing::max_abs_diff;
using testing::params_of;

// The distributed run's model: rank 0 from the reference's seed, every
// other rank from its own, so that the result is right only if the strategy
// broadcasts rank 0's initial state (the batches stay opts.seed's: train()
// draws them).
std::unique_ptr<models::Model> rank_seeded_model(const train::TrainOptions& opts, int rank) {
  auto o = opts;
  o.seed = opts.seed + 1009 * rank;
  return train::make_seeded_model(o);
}

class Equivalence : public ::testing::TestWithParam<std::string> {};

TEST_P(Equivalence, NRanksEqualOneProcessWithNTimesTheBatch) {
  const std::string reducer = GetParam();
  if (reducer == "ddp" && !backend_has_c10d_group())
    GTEST_SKIP() << "backend " << g_comm->backend() << " has no c10d process group";
  comm::Communicator& c = *g_comm;
  const int n = c.size();
  auto opts = testing::small_mlp_options(reducer);

  auto model = rank_seeded_model(opts, c.rank());
  const auto initial = params_of(*model);
  const auto r = train::train(opts, *model, &c, n, c.rank());
  train::verify_replicas(c, *model->module(), r.buffers_in_step);  // throws on any difference
  // After the last step ddp leaves no gradients (set to None, as PyTorch
  // 2.x's zero_grad() does), nor does zero2 (only its shard's gradient
  // outlives a backward); overlap, sync and zero1 keep theirs, zeroed, as
  // views of their buckets.
  for (const auto& p : model->module()->parameters()) {
    ASSERT_EQ(p.grad().defined(),
              reducer != "ddp" && reducer != "zero2" && reducer != "fsdp" && reducer != "horovod")
        << reducer;
    if (p.grad().defined()) {
      EXPECT_EQ(p.grad().abs().max().item<double>(), 0.0) << reducer;
    }
  }
  const auto distributed = params_of(*model);
  ASSERT_GT(max_abs_diff(initial, distributed), 1e-3) << "training did not change the parameters";

  // The reference: one process, global batch, no synchronisation.
  auto ref_opts = opts;
  ref_opts.reducer = "none";
  ref_opts.batch_size = opts.batch_size * n;
  auto ref_model = train::make_seeded_model(ref_opts);
  train::train(ref_opts, *ref_model, nullptr, 1, 0);
  for (const auto& p : ref_model->module()->parameters()) ASSERT_FALSE(p.grad().defined());
  const auto reference = params_of(*ref_model);
  EXPECT_LT(max_abs_diff(reference, distributed), 2e-5)
      << "reducer " << reducer << " on " << n << " ranks differs from one process with batch "
      << ref_opts.batch_size;

  if (n > 1) {
    // Without synchronisation a rank's result must differ: the comparison
    // above can fail.
    auto local_opts = opts;
    local_opts.reducer = "none";
    auto local = train::make_seeded_model(local_opts);
    train::train(local_opts, *local, nullptr, n, c.rank());
    EXPECT_GT(max_abs_diff(reference, params_of(*local)), 1e-4);
  }
}

// The same with AdamW (two states per parameter, per-element step sizes):
// its update divides by sqrt(v), so a gradient's rounding can move a
// near-zero element's step by more than SGD's would; the bound is still two
// orders below one step (lr 1e-3). AdamW's step is (nearly) invariant to the
// gradient's scale, so this case cannot tell a summed gradient from an
// averaged one: the SGD case above can (its step is lr x the gradient), and
// is the one that proves the averaging.
TEST_P(Equivalence, AdamWNRanksEqualOneProcessWithNTimesTheBatch) {
  const std::string reducer = GetParam();
  if (reducer == "ddp" && !backend_has_c10d_group())
    GTEST_SKIP() << "backend " << g_comm->backend() << " has no c10d process group";
  comm::Communicator& c = *g_comm;
  const int n = c.size();
  auto opts = testing::small_mlp_options(reducer);
  opts.optimizer = "adamw";
  opts.lr = 0;         // AdamW's default, 1e-3
  opts.momentum = -1;  // SGD's, not given
  auto model = rank_seeded_model(opts, c.rank());
  const auto initial = params_of(*model);
  const auto r = train::train(opts, *model, &c, n, c.rank());
  train::verify_replicas(c, *model->module(), r.buffers_in_step);
  const auto distributed = params_of(*model);
  ASSERT_GT(max_abs_diff(initial, distributed), 1e-3) << "training did not change the parameters";
  auto ref_opts = opts;
  ref_opts.reducer = "none";
  ref_opts.batch_size = opts.batch_size * n;
  auto ref_model = train::make_seeded_model(ref_opts);
  train::train(ref_opts, *ref_model, nullptr, 1, 0);
  EXPECT_LT(max_abs_diff(params_of(*ref_model), distributed), 1e-5)
      << "AdamW, reducer " << reducer << " on " << n << " ranks differs from one process with batch "
      << ref_opts.batch_size;
}

INSTANTIATE_TEST_SUITE_P(Reducers, Equivalence,
                         ::testing::Values("ddp", "overlap", "sync", "allreduce-after-backward",
                                           "horovod", "zero1", "zero2", "fsdp"),
                         [](const auto& info) {
                           return info.param == "allreduce-after-backward" ? std::string("aab")
                                                                           : info.param;
                         });

// A small GPT-2 under fsdp (units: its blocks, each with a residual; the root
// holds the tied embedding/head, used first and last): with the units freed
// after forward and gathered again for backward (FSDP2's default) and with
// them kept, N ranks train as one process with N times the batch, and the
// module's full parameters are in place afterwards (the replica check).
// A tiny GPT-2 (width 16, 2 heads, 40 tokens, 8 positions, batch 2), 3
// iterations of momentum SGD on one thread. SGD: AdamW would turn the
// rounding of near-zero gradients (the causal attention has many) into whole
// steps of lr (see above).
train::TrainOptions tiny_gpt_options(int64_t layers) {
  train::TrainOptions o;
  o.model = "gpt2";
  o.layers = layers;
  o.width = 16;
  o.heads = 2;
  o.vocab = 40;
  o.seq_len = 8;
  o.batch_size = 2;
  o.iters = 3;
  o.warmup = 0;
  o.threads = 1;
  o.lr = 0.1;
  o.momentum = 0.9;
  o.seed = 5;
  return o;
}

// `o` trained on every rank of the job (each from its own seed:
// rank_seeded_model) and in one process with the job's global batch; the
// replicas checked, and training must have moved the parameters.
struct AgainstOneProcess {
  train::TrainResult result;         // this rank's
  std::unique_ptr<models::Model> reference;  // the one process's model
  std::vector<torch::Tensor> distributed;    // this rank's parameters after training
  double distance = 0;               // max |distributed - reference|
};

AgainstOneProcess train_against_one_process(const train::TrainOptions& o) {
  comm::Communicator& c = *g_comm;
  AgainstOneProcess out;
  auto model = rank_seeded_model(o, c.rank());
  const auto initial = params_of(*model);
  out.result = train::train(o, *model, &c, c.size(), c.rank());
  if (o.activation_checkpointing != "none") {  // the mode reached the model (else the check below proves nothing)
    EXPECT_EQ(models::recompute_name(model->unit_seam()->recompute()), o.activation_checkpointing);
  }
  train::verify_replicas(c, *model->module(), out.result.buffers_in_step);
  out.distributed = params_of(*model);
  EXPECT_GT(max_abs_diff(initial, out.distributed), 1e-3) << "training did not change the parameters";
  auto ref_opts = o;
  ref_opts.reducer = "none";
  ref_opts.reshard_after_forward = -1;
  ref_opts.activation_checkpointing = "none";  // one process keeping every activation
  ref_opts.batch_size = o.batch_size * c.size();
  out.reference = train::make_seeded_model(ref_opts);
  train::train(ref_opts, *out.reference, nullptr, 1, 0);
  out.distance = max_abs_diff(params_of(*out.reference), out.distributed);
  return out;
}

class GptEquivalence : public ::testing::TestWithParam<std::string> {};

TEST_P(GptEquivalence, NRanksEqualOneProcessWithNTimesTheBatch) {
  comm::Communicator& c = *g_comm;
  const int n = c.size();
  auto o = tiny_gpt_options(3);
  o.reducer = GetParam() == "fsdp-keep" ? "fsdp" : GetParam();
  if (GetParam() == "fsdp-keep") o.reshard_after_forward = 0;
  const auto run = train_against_one_process(o);
  const auto& r = run.result;
  if (o.reducer == "fsdp") {
    ASSERT_EQ(r.buckets.size(), 4u) << "3 blocks and the root";
  }
  EXPECT_LT(run.distance, 2e-5) << GetParam() << " on " << n << " ranks";
  if (o.reducer != "fsdp") return;
  // Model state: only shards are held after the step.
  int64_t psi = 0;
  for (const auto& p : run.reference->module()->parameters()) psi += p.numel();
  EXPECT_LE(r.model_state_bytes(), train::expected_model_state_bytes("fsdp", psi, 1, n) +
                                       train::sharded_padding_bound("fsdp", 4, 1, n));
  EXPECT_GE(r.model_state_bytes(), train::expected_model_state_bytes("fsdp", psi, 1, n));
}

INSTANTIATE_TEST_SUITE_P(Strategies, GptEquivalence,
                         ::testing::Values("fsdp", "fsdp-keep", "zero1", "zero2", "overlap"),
                         [](const auto& info) {
                           return info.param == "fsdp-keep" ? std::string("fsdp_keep") : info.param;
                         });

// AdamW on a transformer, under the strategies that own the optimizer's
// state (sharded) and one replicated: GPT-2 as above, 3 steps of lr 1e-3.
// AdamW divides by sqrt(v), so a gradient element near zero whose rounding
// differs between N ranks and one process can move by up to a step: the
// bound is half the 3 steps' travel (3e-3; measured 3.4e-4 at 2 ranks,
// 6.2e-4 at 3), an unsynchronised rank beyond the whole travel (measured
// 6.0e-3), and both distances are printed.
class GptAdamW : public ::testing::TestWithParam<std::string> {};

TEST_P(GptAdamW, NRanksEqualOneProcessWithNTimesTheBatch) {
  comm::Communicator& c = *g_comm;
  const int n = c.size();
  auto o = tiny_gpt_options(2);
  o.optimizer = "adamw";
  o.lr = 0;         // AdamW's default, 1e-3
  o.momentum = -1;  // SGD's, not given
  o.reducer = GetParam();
  const auto run = train_against_one_process(o);
  const double d = run.distance;
  if (c.rank() == 0) std::printf("GPT-2 AdamW %s on %d ranks: max |p - one process| %.3g\n", GetParam().c_str(), n, d);
  EXPECT_LT(d, 1.5e-3) << GetParam() << " on " << n << " ranks";
  if (n == 1) return;
  // Without synchronisation a rank lands much further away: the bound can fail.
  auto local_opts = o;
  local_opts.reducer = "none";
  auto local = train::make_seeded_model(local_opts);
  train::train(local_opts, *local, nullptr, n, c.rank());
  const double dl = max_abs_diff(params_of(*run.reference), params_of(*local));
  if (c.rank() == 0) std::printf("  unsynchronised rank 0: %.3g\n", dl);
  EXPECT_GT(dl, 3e-3);
}

INSTANTIATE_TEST_SUITE_P(Strategies, GptAdamW, ::testing::Values("overlap", "zero1", "zero2", "fsdp"));

// A small Llama (RMSNorm, SwiGLU, rotary positions, 4 query heads sharing 2
// key/value heads) trains under overlap (replicated; ddp needs gloo, this
// test also runs on mpi) and fsdp like one process.
class LlamaEquivalence : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaEquivalence, NRanksEqualOneProcessWithNTimesTheBatch) {
  comm::Communicator& c = *g_comm;
  const int n = c.size();
  auto o = tiny_gpt_options(2);
  o.model = "llama3-8b";
  o.heads = 4;
  o.kv_heads = 2;
  o.reducer = GetParam();
  const auto run = train_against_one_process(o);
  if (o.reducer == "fsdp") {
    ASSERT_EQ(run.result.buckets.size(), 3u) << "2 blocks and the root";
  }
  EXPECT_LT(run.distance, 2e-5) << GetParam() << " on " << n << " ranks";
}

INSTANTIATE_TEST_SUITE_P(Strategies, LlamaEquivalence, ::testing::Values("overlap", "fsdp"));

// Activation checkpointing under every data-parallel strategy: the blocks
// recomputed in backward (full on GPT-2; selective, the attention core, on
// the Llama) train like one process that keeps every activation. The
// recomputed blocks' parameter gradients reach the strategy's hooks in the
// outer backward (the c10d Reducer's, horovod's, the sharded strategies';
// fsdp gathers a unit again before its recomputation).
class Checkpointed : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(Checkpointed, NRanksEqualOneProcessWithoutCheckpointing) {
  const auto& [model, strategy] = GetParam();
  if (strategy == "ddp" && !backend_has_c10d_group())
    GTEST_SKIP() << "backend " << g_comm->backend() << " has no c10d process group";
  auto o = tiny_gpt_options(2);
  if (model == "llama3-8b") {
    o.model = model;
    o.heads = 4;
    o.kv_heads = 2;
  }
  o.activation_checkpointing = model == "gpt2" ? "full" : "selective";
  o.reducer = strategy == "fsdp-keep" ? "fsdp" : strategy;
  if (strategy == "fsdp-keep") o.reshard_after_forward = 0;
  const auto run = train_against_one_process(o);
  EXPECT_LT(run.distance, 2e-5) << model << " " << o.activation_checkpointing << " " << strategy << " on "
                                << g_comm->size() << " ranks";
}

INSTANTIATE_TEST_SUITE_P(Gpt2Full, Checkpointed,
                         ::testing::Combine(::testing::Values("gpt2"),
                                            ::testing::Values("ddp", "overlap", "sync", "horovod", "zero1", "zero2",
                                                              "fsdp", "fsdp-keep")),
                         [](const auto& info) {
                           auto s = std::get<1>(info.param);
                           return s == "fsdp-keep" ? std::string("fsdp_keep") : s;
                         });
INSTANTIATE_TEST_SUITE_P(LlamaSelective, Checkpointed,
                         ::testing::Combine(::testing::Values("llama3-8b"), ::testing::Values("overlap", "fsdp")),
                         [](const auto& info) { return std::get<1>(info.param); });

// fsdp with FSDP2's MixedPrecisionPolicy(param_dtype=bfloat16,
// reduce_dtype=float32) under --amp bf16: every unit is all-gathered in
// bfloat16 (half the bytes of the float32 gathers, seen in the trace), the
// training stays close to one process under the same autocast (bfloat16
// parameters and gradients round where float32 ones would not), the
// replicas stay identical, and after the run the parameters are float32
// again.
// Under bfloat16 autocast with fsdp's bfloat16 gathers, checkpointing
// changes what backward keeps, not what it computes: the recomputation runs
// under the same autocast with the same gathered bfloat16 parameters, so the
// ranks end with the parameters they end with without it.
TEST(FsdpMixedPrecision, CheckpointedBf16TrainsAsWithoutCheckpointing) {
  comm::Communicator& c = *g_comm;
  auto o = tiny_gpt_options(2);
  o.amp = "bf16";
  o.reducer = "fsdp";
  o.param_dtype = "bf16";
  auto run = [&](const std::string& ac) {
    auto opts = o;
    opts.activation_checkpointing = ac;
    auto model = train::make_seeded_model(opts);
    const auto r = train::train(opts, *model, &c, c.size(), c.rank());
    train::verify_replicas(c, *model->module(), r.buffers_in_step);
    EXPECT_EQ(models::recompute_name(model->unit_seam()->recompute()), ac);
    return params_of(*model);
  };
  const auto plain = run("none");
  const auto full = run("full");
  EXPECT_LT(max_abs_diff(plain, full), 1e-6) << "on " << c.size() << " ranks";
}

TEST(FsdpMixedPrecision, Bf16GathersHalveTheBytesAndTrainLikeOneProcess) {
  comm::Communicator& c = *g_comm;
  const int n = c.size();
  auto o = tiny_gpt_options(2);
  o.amp = "bf16";
  o.reducer = "fsdp";
  auto run = [&](const std::string& param_dtype, trace::Timeline& timeline) {
    auto opts = o;
    opts.param_dtype = param_dtype;
    auto model = train::make_seeded_model(opts);
    const auto r = train::train(opts, *model, &c, n, c.rank(), {}, timeline);
    train::verify_replicas(c, *model->module(), r.buffers_in_step);
    for (const auto& p : model->module()->parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat);
    return params_of(*model);
  };
  trace::Timeline t32(0, o.iters), t16(0, o.iters);
  const auto p32 = run("float32", t32);
  const auto p16 = run("bf16", t16);
  auto gathered = [](const trace::Timeline& t) {
    std::map<std::pair<int, int>, std::int64_t> bytes;  // (iteration, unit) -> bytes
    for (const auto& e : t.events())
      if (e.kind == trace::EventKind::kAllGather) bytes[{e.iteration, e.bucket}] += e.bytes;
    return bytes;
  };
  // --trace sees the gradients become ready under bf16 parameters as under
  // float32 ones (the probe hooks the bf16 parameters' own accumulators).
  auto ready = [](const trace::Timeline& t) {
    int n = 0;
    for (const auto& e : t.events()) n += e.kind == trace::EventKind::kBucketReady;
    return n;
  };
  EXPECT_GT(ready(t32), 0);
  EXPECT_EQ(ready(t16), ready(t32)) << "bucket-ready stamps lost under --param-dtype bf16";
  // The policy's reduce_dtype: gradients are reduce-scattered in float32
  // under bf16 parameters, the same bytes as with float32 ones (a bf16
  // reduction would halve them and show as bf16; the loss tolerance below
  // could not tell).
  auto reduced = [](const trace::Timeline& t) {
    std::map<std::pair<int, int>, std::pair<std::int64_t, int>> out;  // (iteration, unit) -> bytes, dtype
    for (const auto& e : t.events())
      if (e.kind == trace::EventKind::kCollective) out[{e.iteration, e.bucket}] = {e.bytes, e.dtype};
    return out;
  };
  const auto r32 = reduced(t32), r16 = reduced(t16);
  ASSERT_FALSE(r16.empty());
  EXPECT_EQ(r16, r32) << "fsdp under --param-dtype bf16 reduces other bytes or another dtype than float32";
  for (const auto& [key, v] : r16) EXPECT_EQ(v.second, static_cast<int>(trace::WireDType::kFloat32));
  const auto b32 = gathered(t32), b16 = gathered(t16);
  ASSERT_FALSE(b16.empty());
  ASSERT_EQ(b16.size(), b32.size());
  for (const auto& [key, bytes] : b16) EXPECT_EQ(2 * bytes, b32.at(key)) << "unit " << key.second;

  auto ref_opts = o;
  ref_opts.reducer = "none";
  ref_opts.batch_size = o.batch_size * n;
  auto ref_model = train::make_seeded_model(ref_opts);
  const auto initial = params_of(*ref_model);
  train::train(ref_opts, *ref_model, nullptr, 1, 0);
  const auto ref = params_of(*ref_model);
  const double moved = max_abs_diff(initial, ref);
  ASSERT_GT(moved, 1e-2) << "training did not change the parameters";
  // Autocast rounds each rank's products of its own batch: float32 gathers
  // are close to one process, not bitwise; bfloat16 ones a little further.
  const double d32 = max_abs_diff(ref, p32), d16 = max_abs_diff(ref, p16);
  std::printf("fsdp under --amp bf16 on %d ranks: max |p - one process| float32 gathers %.3g, bf16 "
              "gathers %.3g (training moved them up to %.3g)\n",
              n, d32, d16, moved);
  EXPECT_LT(d32, 0.02 * moved) << "float32 gathers on " << n << " ranks";
  EXPECT_LT(d16, 0.02 * moved) << "bfloat16 gathers on " << n << " ranks";
  EXPECT_GT(max_abs_diff(p32, p16), 0) << "--param-dtype bf16 changed nothing";
}

}  // namespace
}  // namespace dtbench

int main(int argc, char** argv) {
  torch::set_num_threads(1);
  return dtbench::testing::run_comm_tests(argc, argv, "ddp_equivalence_test", dtbench::testing::g_comm);
}
