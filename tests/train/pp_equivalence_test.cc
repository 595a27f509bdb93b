// Pipeline parallelism is exact: a gpt2 (its token embedding tied to the LM
// head, held by the first and the last stage) and a Llama cut into stages
// (models/pipeline_split.h) and run by each schedule (train/pipeline.h:
// gpipe, 1f1b, interleaved-1f1b with two stages per rank) train like one
// process holding the whole model: after 3 steps of momentum SGD the loss
// and every parameter of every rank's stages equal the one process's, to
// float32 rounding; with activation checkpointing too. On 4 ranks the
// pipeline composes with data parallelism (pp 2 x dp 2, sync and zero1
// keeping each stage's replicas in step) and with tensor parallelism
// (pp 2 x tp 2). Without the tied gradients' sum the same pipeline trains
// another gpt2 (the check can fail). Runs inside every rank of a job started
// by `dtbench launch` (gloo) or mpirun (mpi); see tests/CMakeLists.txt.
//   pp_equivalence_test --backend gloo|mpi --pp P [--tp T] [gtest flags]
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/torch.h>

#include "comm/communicator.h"
#include "core/error.h"
#include "layout/mesh_comms.h"
#include "layout/pipeline_schedule.h"
#include "layout/tp_region.h"
#include "models/model.h"
#include "train/pipeline.h"
#include "support/ddp_test_support.h"
#include "support/train_fixtures.h"
#include "train/replicas.h"
#include "train/trainer.h"

namespace dtbench {
namespace {

layout::MeshComms* g_mesh = nullptr;

train::TrainOptions tiny(const std::string& model) {
  return testing::tiny_decoder_options(model, 4, 4);
}

using Named = std::map<std::string, torch::Tensor>;

Named named(torch::nn::Module& m, const std::string& strip_prefix_before_dot = "") {
  Named out;
  for (const auto& kv : m.named_parameters()) {
    auto key = kv.key();
    // The pipeline's module names each chunk "chunk<c>.": the model's own names follow.
    if (!strip_prefix_before_dot.empty() && key.rfind(strip_prefix_before_dot, 0) == 0)
      key = key.substr(key.find('.') + 1);
    out[key] = kv.value().detach().clone();
  }
  return out;
}

struct Outcome {
  double loss = 0, reference_loss = 0;
  double max_diff = 0;    // over this rank's parameters, against the one process's
  double moved = 0;       // how far training moved them
  std::size_t params = 0, whole_params = 0;
};

Outcome train_pipeline(train::TrainOptions o, layout::PpSchedule schedule, int chunks, int microbatches,
                       const std::string& reducer, bool sum_tied = true) {
  const auto& mesh = *g_mesh;
  const int p = mesh.dims.pp, dp = mesh.dims.dp;
  const int me = mesh.pp->rank();
  const int dp_rank = mesh.dp != nullptr ? mesh.dp->rank() : 0;
  std::vector<std::unique_ptr<models::Model>> owned;
  std::vector<models::Model*> stage_models;
  // Each replica from its own seed (as dtbench's rows): the strategy's first
  // broadcast must make them the first replica's, which the one process starts from.
  auto own = o;
  own.seed = o.seed + static_cast<std::uint64_t>(dp_rank);
  for (int c = 0; c < chunks; ++c) {
    owned.push_back(train::make_seeded_model(own));  // one seed per replica: the same whole model, cut
    auto& m = *owned.back();
    if (mesh.tp != nullptr) m.tp_seam()->parallelize_tp(layout::make_tp_region(*mesh.tp));
    m.pp_seam()->keep_stage(train::stage_span(o.layers, p * chunks, c * p + me));
    stage_models.push_back(&m);
  }
  train::PipelineOptions po{schedule, p, me, microbatches, chunks};
  po.sum_tied_gradients = sum_tied;
  train::Pipeline pipeline(po, stage_models, *mesh.pp, {o.batch_size / microbatches, o.seq_len, o.width});
  const auto initial = named(pipeline.module(), "chunk");
  o.reducer = dp > 1 ? reducer : "none";
  Outcome out;
  const auto result = train::train(o, *stage_models.front(), mesh.dp, dp, dp_rank, {}, trace::null_observer(), &pipeline);
  if (mesh.dp != nullptr) train::verify_replicas(*mesh.dp, pipeline.module(), result.buffers_in_step);
  out.loss = result.last_loss;
  const auto trained = named(pipeline.module(), "chunk");

  auto whole = o;
  whole.reducer = "none";
  whole.activation_checkpointing = "none";
  whole.batch_size = o.batch_size * dp;
  auto reference = train::make_seeded_model(whole);
  out.reference_loss = train::train(whole, *reference, nullptr, 1, 0).last_loss;
  if (mesh.tp != nullptr) reference->tp_seam()->parallelize_tp(testing::without_sums(layout::make_tp_region(*mesh.tp)));
  const auto ref = named(*reference->module());
  out.whole_params = ref.size();
  for (const auto& [name, t] : trained) {
    const auto it = ref.find(name);
    EXPECT_NE(it, ref.end()) << "a stage's parameter " << name << " is not the whole model's";
    if (it == ref.end()) continue;
    EXPECT_EQ(t.sizes(), it->second.sizes()) << name;
    out.max_diff = std::max(out.max_diff, (t - it->second).abs().max().item<double>());
    out.moved = std::max(out.moved, (t - initial.at(name)).abs().max().item<double>());
    ++out.params;
  }
  return out;
}

struct Case {
  std::string model;
  layout::PpSchedule schedule;
  int chunks, microbatches;
};

class PpEquivalence : public ::testing::TestWithParam<Case> {};

TEST_P(PpEquivalence, EveryStageEqualsOneProcessWithTheWholeModel) {
  const auto& c = GetParam();
  const auto o = tiny(c.model);
  const auto s = train_pipeline(o, c.schedule, c.chunks, c.microbatches, "sync");
  EXPECT_GT(s.params, 0u);
  EXPECT_LT(s.params, s.whole_params) << "the cut kept the whole model";
  if (g_mesh->dims.dp == 1) {
    EXPECT_NEAR(s.loss, s.reference_loss, 1e-5 * std::abs(s.reference_loss));
  }
  EXPECT_LT(s.max_diff, 2e-5) << c.model << " " << layout::pp_schedule_name(c.schedule) << " on "
                              << g_mesh->dims.describe();
  EXPECT_GT(s.moved, 1e-3) << "training did not move the parameters";
}

// With activation checkpointing (full on gpt2, selective on the Llama) each
// stage recomputes its blocks in its own backward and trains the same.
TEST_P(PpEquivalence, CheckpointedStagesEqualOneProcessWithoutCheckpointing) {
  const auto& c = GetParam();
  auto o = tiny(c.model);
  o.activation_checkpointing = c.model == "gpt2" ? "full" : "selective";
  const auto s = train_pipeline(o, c.schedule, c.chunks, c.microbatches, "zero1");
  EXPECT_LT(s.max_diff, 2e-5) << c.model << " " << o.activation_checkpointing << " "
                              << layout::pp_schedule_name(c.schedule) << " on " << g_mesh->dims.describe();
  EXPECT_GT(s.moved, 1e-3) << "training did not move the parameters";
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, PpEquivalence,
    ::testing::Values(Case{"gpt2", layout::PpSchedule::kGpipe, 1, 4}, Case{"gpt2", layout::PpSchedule::k1f1b, 1, 4},
                      Case{"gpt2", layout::PpSchedule::k1f1b, 1, 2},
                      Case{"gpt2", layout::PpSchedule::kInterleaved1f1b, 2, 2},
                      Case{"gpt2", layout::PpSchedule::kInterleaved1f1b, 2, 4},
                      Case{"llama3-8b", layout::PpSchedule::kGpipe, 1, 2},
                      Case{"llama3-8b", layout::PpSchedule::k1f1b, 1, 4},
                      Case{"llama3-8b", layout::PpSchedule::kInterleaved1f1b, 2, 4}),
    [](const ::testing::TestParamInfo<Case>& i) {
      std::string name = i.param.model == "gpt2" ? "Gpt2" : "Llama";
      name += i.param.schedule == layout::PpSchedule::kGpipe  ? "Gpipe"
              : i.param.schedule == layout::PpSchedule::k1f1b ? "OneFOneB"
                                                               : "Interleaved";
      return name + "M" + std::to_string(i.param.microbatches);
    });

// The negative control: without the sum of the tied embedding's gradients
// (the first stage's use and the head's) gpt2's stages train another model.
TEST(PpEquivalenceControl, WithoutTheTiedSumGpt2Diverges) {
  const auto s = train_pipeline(tiny("gpt2"), layout::PpSchedule::k1f1b, 1, 4, "sync", /*sum_tied=*/false);
  EXPECT_GT(s.max_diff, 1e-4);
}

}  // namespace
}  // namespace dtbench

int main(int argc, char** argv) {
  using namespace dtbench;
  torch::set_num_threads(1);
  ::testing::InitGoogleTest(&argc, argv);
  comm::CommOptions opts;
  int tp = 1, pp = 2;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--backend") opts.backend = argv[i + 1];
    if (std::string(argv[i]) == "--tp") tp = std::stoi(argv[i + 1]);
    if (std::string(argv[i]) == "--pp") pp = std::stoi(argv[i + 1]);
  }
  opts.timeout = std::chrono::seconds(60);
  try {
    const auto world = launch::world_from_env(launch::process_env());
    auto mesh = layout::make_mesh_comms(world, opts, layout::ParallelDims::of_world(world.world_size, tp, pp));
    if (mesh.pp == nullptr) throw UsageError("--pp must be at least 2 here");
    g_mesh = &mesh;
    const int rc = RUN_ALL_TESTS();
    mesh.world->barrier();
    g_mesh = nullptr;
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pp_equivalence_test: %s\n", e.what());
    return 1;
  }
}
