// The dynamic loss scaler's logic on CPU tensors (the same ops run on CUDA):
// unscaling, skipping a step with an inf/nan gradient and halving the scale,
// growth after `interval` clean steps.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "train/loss_scaler.h"

namespace dtbench::train {
namespace {

std::vector<torch::Tensor> params_with_grads(const std::vector<std::vector<float>>& grads) {
  std::vector<torch::Tensor> ps;
  for (const auto& g : grads) {
    auto p = torch::zeros({static_cast<int64_t>(g.size())}, torch::requires_grad());
    p.mutable_grad() = torch::tensor(g);
    ps.push_back(p);
  }
  return ps;
}

LossScalerOptions small_interval() {
  LossScalerOptions o;
  o.init_scale = 1024;
  o.interval = 3;
  return o;
}

TEST(LossScaler, ScalesTheLossAndUnscalesTheGradients) {
  LossScaler s(small_interval(), torch::kCPU);
  EXPECT_DOUBLE_EQ(s.scale(torch::tensor({0.5f})).item<double>(), 512.0);
  auto ps = params_with_grads({{1024.f, -2048.f}, {512.f}});
  EXPECT_FALSE(s.unscale(ps));
  EXPECT_TRUE(torch::equal(ps[0].grad(), torch::tensor({1.f, -2.f})));
  EXPECT_TRUE(torch::equal(ps[1].grad(), torch::tensor({0.5f})));
  EXPECT_EQ(s.skipped_steps(), 0);
}

TEST(LossScaler, NonFiniteGradientSkipsTheStepAndHalvesTheScale) {
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    LossScaler s(small_interval(), torch::kCPU);
    auto ps = params_with_grads({{1.f, 2.f}, {3.f, bad}});
    EXPECT_TRUE(s.unscale(ps)) << bad;
    s.update();
    EXPECT_DOUBLE_EQ(s.current_scale(), 512.0) << bad;
    EXPECT_EQ(s.skipped_steps(), 1);
  }
}

TEST(LossScaler, GrowsAfterIntervalCleanStepsAndABackoffResetsTheCount) {
  LossScaler s(small_interval(), torch::kCPU);
  auto clean_step = [&] {
    auto ps = params_with_grads({{1.f}});
    EXPECT_FALSE(s.unscale(ps));
    s.update();
  };
  clean_step();
  clean_step();
  EXPECT_DOUBLE_EQ(s.current_scale(), 1024.0);
  clean_step();  // the third clean step in a row
  EXPECT_DOUBLE_EQ(s.current_scale(), 2048.0);
  clean_step();
  clean_step();
  auto bad = params_with_grads({{std::numeric_limits<float>::infinity()}});
  EXPECT_TRUE(s.unscale(bad));
  s.update();  // backoff; the two clean steps before it no longer count
  EXPECT_DOUBLE_EQ(s.current_scale(), 1024.0);
  clean_step();
  clean_step();
  EXPECT_DOUBLE_EQ(s.current_scale(), 1024.0);
  clean_step();
  EXPECT_DOUBLE_EQ(s.current_scale(), 2048.0);
  EXPECT_EQ(s.skipped_steps(), 1);
}

}  // namespace
}  // namespace dtbench::train
