// Activation checkpointing (models/checkpoint.h) changes what backward keeps,
// not what it computes: a model trained with --activation-checkpointing full
// or selective gets the gradients it gets without, to float32 rounding (under
// bfloat16 autocast too: the recomputation runs under forward's autocast);
// forward's peak memory falls (full: each block keeps its input only;
// selective: the attention's t x t scores and probabilities are not kept);
// and what a model cannot checkpoint is refused.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "compat/train_compat.h"
#include "core/error.h"
#include "device/memory.h"
#include "models/checkpoint.h"
#include "models/model.h"
#include "train/trainer.h"

namespace dtbench::models {
namespace {

// A decoder of 2 blocks, width 32, 4 heads (Llama's over 2 key/value heads),
// 64 tokens: the attention's scores are 4 x 64 x 64 per sequence, larger
// than a block's other activations, so selective's saving shows.
train::TrainOptions tiny(const std::string& model) {
  train::TrainOptions o;
  o.model = model;
  o.layers = 2;
  o.width = 32;
  o.heads = 4;
  o.kv_heads = 2;
  o.vocab = 40;
  o.seq_len = 64;
  o.batch_size = 2;
  o.image_size = 32;
  o.num_classes = 10;
  o.seed = 5;
  return o;
}

struct Pass {
  double loss = 0;
  std::vector<torch::Tensor> grads;
  std::vector<torch::Tensor> buffers;  // after the step's backward (batch norm's running statistics)
  std::int64_t kept = 0;  // bytes forward left allocated for backward (the loss's graph)
};

// One forward and backward of `o`'s seeded model on a fixed batch, with `mode`.
Pass run(const train::TrainOptions& o, Recompute mode, bool bf16 = false) {
  torch::manual_seed(1);
  auto model = train::make_seeded_model(o);
  model->module()->train();
  EXPECT_TRUE(mode == Recompute::kNone || model->unit_seam() != nullptr);
  const auto batch = train::make_batch(o, model->input_kind(), 1, 0);
  const auto& input = batch.input;
  const auto& target = batch.target;
  Pass p;
  if (auto* seam = model->unit_seam()) {
    EXPECT_EQ(seam->set_recompute(mode), "");
  }
  auto meter = device::make_memory_meter(c10::Device(c10::kCPU));
  const auto before = meter->read().current;
  if (bf16) compat::set_cpu_autocast(true, at::kBFloat16);
  auto loss = model->training_loss(input, target);
  if (bf16) compat::set_cpu_autocast(false, at::kBFloat16);
  p.kept = meter->read().current - before;
  loss.backward();
  p.loss = loss.item<double>();
  for (const auto& param : model->module()->parameters()) {
    EXPECT_TRUE(param.grad().defined());
    p.grads.push_back(param.grad().clone());
  }
  for (const auto& b : model->module()->buffers()) p.buffers.push_back(b.clone());
  return p;
}

double max_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, (a[i] - b[i]).abs().max().item<double>());
  return m;
}

double max_abs(const std::vector<torch::Tensor>& a) {
  double m = 0;
  for (const auto& t : a) m = std::max(m, t.abs().max().item<double>());
  return m;
}

class Checkpoint : public ::testing::TestWithParam<std::tuple<std::string, Recompute>> {};

TEST_P(Checkpoint, GivesTheGradientsOfTheModelWithoutIt) {
  torch::set_num_threads(1);
  const auto& [model, mode] = GetParam();
  const auto o = tiny(model);
  const auto plain = run(o, Recompute::kNone);
  const auto recomputed = run(o, mode);
  ASSERT_EQ(plain.grads.size(), recomputed.grads.size());
  EXPECT_EQ(plain.loss, recomputed.loss);
  EXPECT_GT(max_abs(plain.grads), 1e-4) << "nothing to compare";
  EXPECT_LT(max_diff(plain.grads, recomputed.grads), 1e-6) << model << " " << recompute_name(mode);
  // Batch norm's running statistics moved once, not again by the
  // recomputation (ResNet's blocks).
  ASSERT_EQ(plain.buffers.size(), recomputed.buffers.size());
  for (std::size_t i = 0; i < plain.buffers.size(); ++i)
    EXPECT_TRUE(plain.buffers[i].equal(recomputed.buffers[i])) << model << " buffer " << i;
  // Forward keeps less, except in the MLP, whose units (a linear layer and
  // its ReLU) keep only their input and output either way.
  if (model != "mlp") {
    EXPECT_LT(recomputed.kept, plain.kept) << model << " " << recompute_name(mode);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, Checkpoint,
    ::testing::Values(std::make_tuple("gpt2", Recompute::kFull), std::make_tuple("gpt2", Recompute::kSelective),
                      std::make_tuple("llama3-8b", Recompute::kFull),
                      std::make_tuple("llama3-8b", Recompute::kSelective),
                      std::make_tuple("resnet18", Recompute::kFull), std::make_tuple("mlp", Recompute::kFull)),
    [](const auto& info) {
      std::string name = std::get<0>(info.param) + "_" + recompute_name(std::get<1>(info.param));
      for (auto& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

// What forward leaves for backward: full keeps each block's input only (and
// the head's), selective every block's activations but the attention core's.
TEST(CheckpointMemory, FullKeepsLessThanSelectiveKeepsLessThanNone) {
  torch::set_num_threads(1);
  const auto o = tiny("gpt2");
  const auto none = run(o, Recompute::kNone), selective = run(o, Recompute::kSelective),
             full = run(o, Recompute::kFull);
  EXPECT_LT(full.kept, selective.kept);
  EXPECT_LT(selective.kept, none.kept);
  // docs/metrics.md "Activation checkpointing": a GPT-2 block keeps
  // 4·bt·(16h + a·t) bytes in float32, and full keeps its input (4·bth) of
  // them. Here b 2, t 64, h 32, a 4: 4·128·(15·32 + 4·64) = 376,832 bytes
  // per block less, 753,664 for the 2 blocks; beside them the norms'
  // mean and 1/std (2 x 2 x bt floats) and the causal mask (t² bytes) per
  // block, 6,144 bytes: 765,952 in all.
  const std::int64_t b = 2, t = 64, h = 32, a = 4;
  EXPECT_EQ(none.kept - full.kept, o.layers * (4 * b * t * (15 * h + a * t) + 4 * b * t * 4 + t * t));
  // Selective keeps all but the softmax's probabilities (b·a·t² floats) and
  // the mask: 2 x (131,072 + 4,096) bytes.
  EXPECT_EQ(none.kept - selective.kept, o.layers * (4 * a * b * t * t + t * t));
}

// Under bfloat16 autocast backward recomputes in bfloat16 as forward did:
// the same gradients (recomputed without autocast, in float32, they differ
// by 5e-4 here).
TEST(CheckpointAutocast, RecomputesUnderForwardsAutocast) {
  torch::set_num_threads(1);
  const auto o = tiny("llama3-8b");
  const auto plain = run(o, Recompute::kNone, /*bf16=*/true);
  const auto full = run(o, Recompute::kFull, /*bf16=*/true);
  EXPECT_EQ(plain.loss, full.loss);
  EXPECT_LT(max_diff(plain.grads, full.grads), 1e-6);
  EXPECT_FALSE(compat::cpu_autocast_enabled()) << "backward left autocast on";
}

TEST(CheckpointRefusal, SelectiveNeedsAttention) {
  auto mlp = train::make_seeded_model(tiny("mlp"));
  ASSERT_NE(mlp->unit_seam(), nullptr);
  EXPECT_EQ(mlp->unit_seam()->set_recompute(Recompute::kSelective),
            "selective recomputes the attention core, and this model has no attention (use full)");
  EXPECT_EQ(mlp->unit_seam()->recompute(), Recompute::kNone);
  EXPECT_THROW(parse_recompute("op"), UsageError);
  EXPECT_EQ(parse_recompute("selective"), Recompute::kSelective);
}

// A parameter the region uses must be one it lists: a missing one would
// lose its gradient (backward fails naming it); one listed twice gets its
// gradient once.
TEST(CheckpointParameters, AnUnlistedParameterFailsOneListedTwiceCountsOnce) {
  auto w = torch::randn({3, 3}, torch::requires_grad());
  auto x = torch::randn({2, 3}, torch::requires_grad());
  const Region region = [&w](const std::vector<torch::Tensor>& in) { return in[0].matmul(w); };
  auto lost = checkpoint(region, {x}, {});
  try {
    lost.sum().backward();
    ADD_FAILURE() << "an unlisted parameter's gradient was dropped without a word";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("without being one of its parameters"), std::string::npos) << e.what();
  }
  w.mutable_grad() = torch::Tensor();
  checkpoint(region, {x}, {w, w}).sum().backward();
  const auto once = w.grad().clone();
  w.mutable_grad() = torch::Tensor();
  x.matmul(w).sum().backward();
  EXPECT_TRUE(once.allclose(w.grad()));
}

// A block that draws random numbers (dropout) cannot be recomputed the same.
struct WithDropout : torch::nn::Module, UnitSeam {
  WithDropout() { add_unit(register_module("drop", torch::nn::Dropout(0.1))); }
};

TEST(CheckpointRefusal, DropoutInABlockIsRefused) {
  WithDropout m;
  EXPECT_EQ(m.set_recompute(Recompute::kFull),
            "a block holds dropout, whose recomputation would draw other random numbers");
  EXPECT_EQ(m.recompute(), Recompute::kNone);
}

// The registry's word (what the front end checks before any rank starts)
// is each made model's: its units for full, its attention for selective.
TEST(CheckpointRefusal, TheRegistrySaysWhatEachModelCanRecompute) {
  ModelOptions small;
  small.layers = 1;
  small.width = 16;
  small.heads = 2;
  small.kv_heads = 1;
  small.vocab = 20;
  small.seq_len = 8;
  small.num_classes = 10;
  small.in_features = small.hidden = 8;
  for (const auto& entry : model_registry()) {
    auto model = entry.make(small);
    auto* seam = model->unit_seam();
    EXPECT_EQ(entry.checkpoints_units, seam != nullptr) << entry.name;
    EXPECT_EQ(recompute_refusal(entry, "full").empty(), seam != nullptr) << entry.name;
    const bool attention = seam != nullptr && seam->set_recompute(Recompute::kSelective).empty();
    EXPECT_EQ(entry.checkpoints_attention, attention) << entry.name;
    EXPECT_EQ(recompute_refusal(entry, "selective").empty(), attention) << entry.name;
    EXPECT_EQ(recompute_refusal(entry, "none"), "") << entry.name;
  }
  EXPECT_EQ(recompute_refusal(find_model("vgg16"), "full"),
            "--activation-checkpointing full: vgg16 has no blocks to checkpoint (the gpt, llama, resnet and mlp "
            "models have)");
}

}  // namespace
}  // namespace dtbench::models
