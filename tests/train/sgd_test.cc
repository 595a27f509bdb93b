// train::Sgd (multi-tensor momentum SGD) against LibTorch's
// torch::optim::SGD: the same parameters bit for bit over several steps,
// with and without momentum and weight decay, with a parameter that has no gradient at first,
// zeroing the gradients in place or dropping them (set_to_none) in turn.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "train/sgd.h"

namespace dtbench::train {
namespace {

std::vector<torch::Tensor> make_params(int seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> p;
  for (auto shape : {std::vector<int64_t>{7, 5}, {5}, {3, 3, 2}, {11}})
    p.push_back(torch::randn(shape).requires_grad_(true));
  return p;
}

// Gradients for step `s`; parameter 3 gets none on step 0.
void set_grads(std::vector<torch::Tensor>& ps, int s) {
  torch::manual_seed(100 + s);
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (i == 3 && s == 0) continue;
    ps[i].mutable_grad() = torch::randn_like(ps[i]);
  }
}

void expect_same_as_libtorch(double momentum, double weight_decay = 0) {
  auto mine = make_params(1), ref = make_params(1);
  Sgd sgd(mine, 0.05, momentum, weight_decay);
  torch::optim::SGD libtorch(ref, torch::optim::SGDOptions(0.05).momentum(momentum).weight_decay(weight_decay));
  for (int s = 0; s < 5; ++s) {
    set_grads(mine, s);
    set_grads(ref, s);
    sgd.step();
    libtorch.step();
    for (std::size_t i = 0; i < mine.size(); ++i)
      ASSERT_TRUE(torch::equal(mine[i], ref[i])) << "step " << s << " parameter " << i;
    const bool to_none = s % 2 == 1;
    sgd.zero_grad(to_none);
    for (auto& p : mine) {
      if (to_none) {
        EXPECT_FALSE(p.grad().defined());
      } else if (p.grad().defined()) {
        EXPECT_EQ(p.grad().abs().sum().item<double>(), 0.0);
      }
    }
  }
  // Parameter 3 had no gradient at step 0: it did not move then.
  auto fresh = make_params(1);
  EXPECT_FALSE(torch::equal(mine[3], fresh[3]));
}

TEST(Sgd, MatchesLibTorchWithMomentum) { expect_same_as_libtorch(0.9); }
TEST(Sgd, MatchesLibTorchWithoutMomentum) { expect_same_as_libtorch(0.0); }
// PyTorch's DDP benchmark's optimizer (benchmark.py: lr 0.001 there), and a
// decay large enough that leaving it out or applying it once too often shows.
TEST(Sgd, MatchesLibTorchWithWeightDecay) {
  expect_same_as_libtorch(0.9, 1e-4);
  expect_same_as_libtorch(0.9, 0.3);
  expect_same_as_libtorch(0.0, 0.3);
}
// The decay goes into the gradients in place (no second copy of them at the
// step): .grad then holds grad + weight_decay * p, bit for bit.
TEST(Sgd, WeightDecayIsAddedToTheGradientsInPlace) {
  auto ps = make_params(4);
  set_grads(ps, 1);
  const auto want = ps[0].grad().add(ps[0].detach(), 0.3);  // torch.optim.SGD's d_p.add(p, alpha=wd)
  const void* storage = ps[0].grad().data_ptr();
  Sgd sgd(ps, 0.1, 0.9, 0.3);
  sgd.step();
  EXPECT_EQ(ps[0].grad().data_ptr(), storage);
  EXPECT_TRUE(torch::equal(ps[0].grad(), want));
}

TEST(Sgd, ZeroGradKeepsStorage) {
  auto ps = make_params(2);
  set_grads(ps, 1);
  const void* before = ps[0].grad().data_ptr();
  Sgd sgd(ps, 0.1, 0.9);
  sgd.zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(ps[0].grad().data_ptr(), before);
  EXPECT_EQ(ps[0].grad().abs().sum().item<double>(), 0.0);
}

TEST(Sgd, ZeroGradSetToNoneDropsTheGradients) {
  auto ps = make_params(3);
  set_grads(ps, 1);
  Sgd sgd(ps, 0.1, 0.9);
  sgd.zero_grad(/*set_to_none=*/true);
  for (const auto& p : ps) EXPECT_FALSE(p.grad().defined());
  // A later backward stores its gradient afresh.
  (ps[0] * 2).sum().backward();
  EXPECT_TRUE(torch::equal(ps[0].grad(), torch::full_like(ps[0], 2)));
}

}  // namespace
}  // namespace dtbench::train
