// Model FLOPs counted from a forward pass: how they scale, and exact formulas
// for the MLP, the transformer, GPT and Llama. (The published image-model
// figures are checked once, by env_cli through `dtbench models`.)
#include <chrono>

#include <gtest/gtest.h>

#include "train/flops.h"

namespace dtbench::train {
namespace {

double gmacs(const std::string& model, int64_t image) {
  TrainOptions o;
  o.model = model;
  o.image_size = image;
  return measure_forward_cost(o).macs_per_example / 1e9;
}

// The image models' counts against torchvision's published table: env_cli
// (through `dtbench models`, every model, to the table's two decimals).

TEST(Flops, ScalesWithImageAreaAndCountsEveryMatmulOfTheMlp) {
  // Convolutions scale with the image area (a little more than 1/4 at half
  // the side: the odd map sides round up, 4x4 instead of 3.5x3.5 at the end).
  const double ratio = gmacs("resnet50", 112) / gmacs("resnet50", 224);
  EXPECT_GT(ratio, 0.25);
  EXPECT_LT(ratio, 0.28);
  TrainOptions o;
  o.model = "mlp";
  o.width = 64;
  o.num_classes = 10;
  const auto cost = measure_forward_cost(o);
  EXPECT_DOUBLE_EQ(cost.macs_per_example, 1024.0 * 64 + 64.0 * 64 + 64.0 * 10);
  EXPECT_DOUBLE_EQ(cost.train_flops_per_example(), 6 * cost.macs_per_example);
  EXPECT_EQ(cost.by_op.count("aten::convolution"), 0u);
}

TEST(Flops, TransformerCountsItsMatrixProducts) {
  TrainOptions o;
  o.model = "transformer";
  o.layers = 2;
  o.width = 96;  // 12 heads of 8
  o.seq_len = 16;
  const auto cost = measure_forward_cost(o);
  // Exactly, per token: each encoder layer's attention projections (q, k, v
  // and out: 4w²) and feed-forward (w·4w twice: 8w²), the attention products
  // (QKᵀ and the weighted values: 2·T·w), and the head onto BERT's
  // 30,522-token vocabulary (w·V). A missed product would be off by >= 1/7.
  const double l = 2, w = 96, t = 16, v = 30522;
  EXPECT_DOUBLE_EQ(cost.macs_per_example, t * (l * (12 * w * w + 2 * t * w) + w * v));
  EXPECT_TRUE(cost.by_op.count("aten::mm") + cost.by_op.count("aten::addmm") +
              cost.by_op.count("aten::bmm") + cost.by_op.count("aten::baddbmm") > 0);
}

// GPT: training FLOPs per token are the PaLM paper's 6N + 12·L·H·Q·T
// (appendix B), N the multiply-add weights (the blocks' 12·L·w² and the tied
// head's vocab·w: biases, LayerNorms and the position table multiply
// nothing), H·Q = w, T the sequence length; the attention products are in it.
TEST(Flops, GptMatchesPalmFormula) {
  TrainOptions o;
  o.model = "gpt2";
  o.layers = 2;
  o.width = 64;
  o.heads = 4;
  o.vocab = 1000;
  o.seq_len = 32;
  const auto cost = measure_forward_cost(o);
  const double l = 2, w = 64, v = 1000, t = 32;
  const double n = 12 * l * w * w + v * w;
  const double per_token = 6 * n + 12 * l * w * t;
  EXPECT_DOUBLE_EQ(cost.train_flops_per_example(), per_token * t);
  models::ModelOptions m;
  m.layers = 2;
  m.width = 64;
  m.vocab = 1000;
  EXPECT_DOUBLE_EQ(6 * models::gpt_forward_macs(m, 32), per_token * t);  // `dtbench models`' figure
  EXPECT_GT(cost.by_op.count("aten::bmm"), 0u);  // the attention products
}

// Llama: the shapes' formula (`dtbench models`, the projection) equals what
// the FLOP counter sees in a forward pass, with grouped-query attention.
TEST(Flops, LlamaMatchesItsShapeFormula) {
  TrainOptions o;
  o.model = "llama3-8b";
  o.layers = 2;
  o.width = 64;
  o.heads = 4;
  o.kv_heads = 2;
  o.vocab = 1000;
  o.seq_len = 16;
  const auto cost = measure_forward_cost(o);
  models::ModelOptions m = models::find_model("llama3-8b").defaults;
  m.layers = 2;
  m.width = 64;
  m.heads = 4;
  m.kv_heads = 2;
  m.vocab = 1000;
  // Per token: 2 layers x (q, o 2·64² + k, v 2·64·32 + SwiGLU 3·64·224) + head 1000·64.
  const double per_token = 2 * (2 * 64.0 * 64 + 2 * 64.0 * 32 + 3 * 64.0 * 224) + 1000 * 64.0;
  EXPECT_DOUBLE_EQ(models::llama_forward_macs(m, 16), 16 * per_token + 2 * 2 * 64.0 * 16 * 16);
  EXPECT_DOUBLE_EQ(cost.macs_per_example, models::llama_forward_macs(m, 16));
  // What a training row records: the formula, through the same options.
  EXPECT_DOUBLE_EQ(train_flops_per_example(o), cost.train_flops_per_example());
}

// A row's FLOPs come from the formula for decoders (no forward is run: a
// llama3-8b at 8,192 tokens would first take ~32 GB) and from the counter
// for the rest.
TEST(Flops, RowsTakeTheFormulaWhereAModelHasOne) {
  TrainOptions o;
  o.model = "llama3-8b";
  o.seq_len = 8192;
  const auto t0 = std::chrono::steady_clock::now();
  const double flops = train_flops_per_example(o);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_DOUBLE_EQ(flops, 6 * models::llama_forward_macs(models::find_model("llama3-8b").defaults, 8192));
  TrainOptions mlp;
  mlp.model = "mlp";
  EXPECT_DOUBLE_EQ(train_flops_per_example(mlp), measure_forward_cost(mlp).train_flops_per_example());
}

}  // namespace
}  // namespace dtbench::train
