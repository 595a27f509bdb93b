// Tensor parallelism is exact: a gpt2 and a Llama (grouped-query heads)
// split by their tensor-parallel plans (models/tensor_parallel.h; the
// group's sums from layout/tp_region) train like one process holding the
// whole model: after 3 steps of momentum SGD the loss and each rank's part of
// every parameter equal the one process's, to float32 rounding. On a mesh
// with data-parallel replicas too (layout/mesh_comms: tp 2 x dp 2 at 4 ranks)
// a data-parallel strategy keeps each tensor-parallel part in step across
// its replicas (overlap, and fsdp sharding the parts further), and the one
// process trains with the replicas' whole batch. Without the group's sums the
// same split does not train the same model (the check can fail). Runs inside
// every rank of a job started by `dtbench launch` (gloo) or mpirun (mpi);
// see tests/CMakeLists.txt.
//   tp_equivalence_test --backend gloo|mpi --tp T [gtest flags]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/torch.h>

#include "comm/communicator.h"
#include "core/error.h"
#include "layout/mesh_comms.h"
#include "layout/tp_region.h"
#include "models/model.h"
#include "support/ddp_test_support.h"
#include "support/train_fixtures.h"
#include "train/replicas.h"
#include "train/trainer.h"

namespace dtbench {
namespace {

using testing::max_abs_diff;
using testing::params_of;

layout::MeshComms* g_mesh = nullptr;

train::TrainOptions tiny(const std::string& model) {
  return testing::tiny_decoder_options(model, 2, 2);
}

struct Split {
  train::TrainResult result;
  std::vector<torch::Tensor> initial;    // this rank's part, before training
  std::vector<torch::Tensor> params;     // this rank's part, after training
  std::vector<torch::Tensor> reference;  // the one process's, cut the same way
  double reference_loss = 0;
};

// `o` trained on the mesh, split by `region` and replicated over the mesh's
// data-parallel group with `reducer`; and in one process whole, with every
// replica's batch; the one process's trained parameters then cut into this
// rank's part.
Split train_split(train::TrainOptions o, const models::TpRegion& region, const std::string& reducer) {
  const auto& mesh = *g_mesh;
  const int dp = mesh.dims.dp;
  const int dp_rank = mesh.dp ? mesh.dp->rank() : 0;
  Split s;
  auto model = train::make_seeded_model(o);  // the same seed on every rank: one model, split
  auto* plan = model->tp_seam();
  DTBENCH_CHECK(plan != nullptr, "no tensor-parallel plan");
  plan->parallelize_tp(region);
  for (const auto& p : params_of(*model)) s.initial.push_back(p.clone());
  o.reducer = dp > 1 ? reducer : "none";
  s.result = train::train(o, *model, mesh.dp, dp, dp_rank);
  if (o.activation_checkpointing != "none") {  // the mode reached the model
    EXPECT_EQ(models::recompute_name(model->unit_seam()->recompute()), o.activation_checkpointing);
  }
  if (mesh.dp) train::verify_replicas(*mesh.dp, *model->module(), s.result.buffers_in_step);
  s.params = params_of(*model);

  auto whole = o;
  whole.reducer = "none";
  whole.activation_checkpointing = "none";
  whole.batch_size = o.batch_size * dp;
  auto reference = train::make_seeded_model(whole);
  s.reference_loss = train::train(whole, *reference, nullptr, 1, 0).last_loss;
  const auto cut = testing::without_sums(region);
  reference->tp_seam()->parallelize_tp(cut);
  s.reference = params_of(*reference);
  return s;
}

class TpEquivalence : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  std::string model() const { return std::get<0>(GetParam()); }
  std::string reducer() const { return std::get<1>(GetParam()); }
};

TEST_P(TpEquivalence, EveryRanksPartEqualsOneProcessWithTheWholeModel) {
  const auto& mesh = *g_mesh;
  const auto o = tiny(model());
  const auto region = layout::make_tp_region(*mesh.tp);
  const auto s = train_split(o, region, reducer());
  ASSERT_EQ(s.params.size(), s.reference.size());
  for (std::size_t i = 0; i < s.params.size(); ++i)
    ASSERT_EQ(s.params[i].sizes(), s.reference[i].sizes()) << "parameter " << i;
  // Each rank holds its part: the blocks' projections are a 1/tp share.
  int64_t mine = 0, all = 0;
  for (const auto& p : s.params) mine += p.numel();
  for (const auto& p : params_of(*train::make_seeded_model(o))) all += p.numel();
  EXPECT_LT(mine, all) << "the plan split nothing";
  // The loss: of this replica's batch; the one process's is of every
  // replica's, so they agree only without data parallelism.
  if (mesh.dims.dp == 1) {
    EXPECT_NEAR(s.result.last_loss, s.reference_loss, 1e-5 * std::abs(s.reference_loss));
  }
  EXPECT_LT(max_abs_diff(s.params, s.reference), 2e-5)
      << model() << " on " << mesh.dims.describe() << " (" << reducer() << ")";
  EXPECT_GT(max_abs_diff(s.initial, s.params), 1e-3) << "training did not move the parameters";
}

// With activation checkpointing (full on gpt2, selective on the Llama) the
// split trains the same: the recomputation in backward runs the block's
// forward sums again, in the same order on every rank of the group, and the
// one process keeps every activation.
TEST_P(TpEquivalence, CheckpointedPartsEqualOneProcessWithoutCheckpointing) {
  const auto& mesh = *g_mesh;
  auto o = tiny(model());
  o.activation_checkpointing = model() == "gpt2" ? "full" : "selective";
  const auto s = train_split(o, layout::make_tp_region(*mesh.tp), reducer());
  EXPECT_LT(max_abs_diff(s.params, s.reference), 2e-5)
      << model() << " " << o.activation_checkpointing << " on " << mesh.dims.describe() << " (" << reducer() << ")";
  EXPECT_GT(max_abs_diff(s.initial, s.params), 1e-3) << "training did not move the parameters";
}

// The negative control: the same split without the group's sums (each rank
// its heads' partial products alone) trains a different model.
TEST_P(TpEquivalence, WithoutTheGroupsSumsThePartsDiverge) {
  const auto& mesh = *g_mesh;
  const auto o = tiny(model());
  const auto region = testing::without_sums(layout::make_tp_region(*mesh.tp));
  const auto s = train_split(o, region, reducer());
  EXPECT_GT(max_abs_diff(s.params, s.reference), 1e-4) << model();
}

// Without data-parallel replicas the strategy is none: one instantiation.
// (tests/CMakeLists.txt runs the fsdp ones only on a mesh with replicas.)
INSTANTIATE_TEST_SUITE_P(Overlap, TpEquivalence,
                         ::testing::Combine(::testing::Values("gpt2", "llama3-8b"), ::testing::Values("overlap")));
INSTANTIATE_TEST_SUITE_P(Fsdp, TpEquivalence,
                         ::testing::Combine(::testing::Values("gpt2", "llama3-8b"), ::testing::Values("fsdp")));

// The mesh's communicators hold the ranks of parallel_dims' groups, in
// order: each rank's job rank, gathered over its tensor- and data-parallel
// communicators, is its group's list.
TEST(MeshComms, EachCommunicatorHoldsItsGroup) {
  const auto& mesh = *g_mesh;
  const int me = mesh.world->rank();
  auto members = [&](comm::Communicator* c) {
    if (c == nullptr) return std::vector<int>{me};
    auto mine = torch::full({1}, me, torch::kInt);
    auto all = torch::empty({c->size()}, torch::kInt);
    c->allgather(mine, all)->wait(c->timeout());
    return std::vector<int>(all.data_ptr<int>(), all.data_ptr<int>() + c->size());
  };
  EXPECT_EQ(members(mesh.tp), mesh.dims.group_of(layout::Dim::kTp, me));
  EXPECT_EQ(members(mesh.dp), mesh.dims.group_of(layout::Dim::kDp, me));
}

// Refusals of the plans, from the shapes alone.
TEST(TpPlan, RefusesWhatDoesNotSplit) {
  const auto& gpt = models::find_model("gpt2");
  EXPECT_EQ(models::tp_refusal(gpt, gpt.defaults, 1), "");
  EXPECT_EQ(models::tp_refusal(gpt, gpt.defaults, 4), "");
  EXPECT_EQ(models::tp_refusal(gpt, gpt.defaults, 5), "gpt: 12 attention heads do not split 5 ways (--tp)");
  const auto& llama = models::find_model("llama3-8b");
  EXPECT_EQ(models::tp_refusal(llama, llama.defaults, 8), "");
  EXPECT_EQ(models::tp_refusal(llama, llama.defaults, 16), "llama: 8 key/value heads do not split 16 ways (--tp)");
  EXPECT_EQ(models::tp_refusal(models::find_model("resnet50"), {}, 2),
            "--tp 2: resnet50 has no tensor-parallel plan (gpt and llama models have)");
}

}  // namespace
}  // namespace dtbench

// Builds the mesh (world size / --tp replicas of --tp ranks) from the
// environment, runs the tests, then barriers so no rank leaves while others
// still talk to it.
int main(int argc, char** argv) {
  using namespace dtbench;
  torch::set_num_threads(1);
  ::testing::InitGoogleTest(&argc, argv);
  comm::CommOptions opts;
  int tp = 1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--backend") opts.backend = argv[i + 1];
    if (std::string(argv[i]) == "--tp") tp = std::stoi(argv[i + 1]);
  }
  opts.timeout = std::chrono::seconds(60);
  try {
    const auto world = launch::world_from_env(launch::process_env());
    auto mesh = layout::make_mesh_comms(world, opts, layout::ParallelDims::of_world(world.world_size, tp, 1));
    if (mesh.tp == nullptr) throw UsageError("--tp must be at least 2 here");
    g_mesh = &mesh;
    const int rc = RUN_ALL_TESTS();
    mesh.world->barrier();
    g_mesh = nullptr;
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tp_equivalence_test: %s\n", e.what());
    return 1;
  }
}
