// train::AdamW (multi-tensor) against the installed torch.optim.AdamW of the
// same LibTorch version: this test writes the initial parameters, each step's
// gradients (a parameter without one on step 0) and its parameters after each
// step; tests/train/adamw_reference.py replays them through torch.optim.AdamW
// and compares bit for bit. The Python is the flavour's (ctest sets
// DTBENCH_TORCH_PYTHON: python3 with Debian's python3-torch, or
// bench/peers/python-wheel with the wheel's torch).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "compat/torch_version.h"
#include "train/adamw.h"

namespace dtbench::train {
namespace {

std::vector<torch::Tensor> make_adamw_params() {
  torch::manual_seed(1);
  std::vector<torch::Tensor> p;
  for (auto shape : {std::vector<int64_t>{7, 5}, {5}, {3, 3, 2}, {11}})
    p.push_back(torch::randn(shape).requires_grad_(true));
  return p;
}

void write_raw(const std::string& path, const torch::Tensor& t) {
  const auto c = t.detach().contiguous();
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.numel() * 4));
  ASSERT_TRUE(f.good()) << path;
}

std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return "popen failed";
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int rc = pclose(p);
  return (rc == 0 ? "0 " : "rc ") + out;
}

void expect_same_as_torch_optim(AdamW::Options o, int steps) {
  const char* py = std::getenv("DTBENCH_TORCH_PYTHON");
  const char* script = std::getenv("DTBENCH_ADAMW_REFERENCE");
  ASSERT_TRUE(py && script) << "DTBENCH_TORCH_PYTHON and DTBENCH_ADAMW_REFERENCE are set by ctest";
  char tmpl[] = "/tmp/dtbench-adamw-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto ps = make_adamw_params();
  {
    std::ofstream m(dir + "/manifest.txt");
    m.precision(17);
    m << o.lr << ' ' << o.beta1 << ' ' << o.beta2 << ' ' << o.eps << ' ' << o.weight_decay << ' ' << steps << '\n';
    for (const auto& p : ps) {
      for (auto s : p.sizes()) m << s << ' ';
      m << '\n';
    }
  }
  for (std::size_t i = 0; i < ps.size(); ++i) write_raw(fmt::format("{}/p_init_{}.bin", dir, i), ps[i]);
  AdamW adamw(ps, o);
  for (int s = 0; s < steps; ++s) {
    torch::manual_seed(100 + s);
    for (std::size_t i = 0; i < ps.size(); ++i) {
      if (i == 3 && s == 0) continue;  // no gradient yet: no step, no state
      ps[i].mutable_grad() = torch::randn_like(ps[i]);
      write_raw(fmt::format("{}/g_{}_{}.bin", dir, s, i), ps[i].grad());
    }
    adamw.step();
    for (std::size_t i = 0; i < ps.size(); ++i) write_raw(fmt::format("{}/p_{}_{}.bin", dir, s, i), ps[i]);
    adamw.zero_grad(/*set_to_none=*/s % 2 == 1);
  }
  const auto out = run_capture(fmt::format("'{}' '{}' '{}' '{}'", py, script, dir, compat::torch_version()));
  EXPECT_EQ(out.substr(0, 2), "0 ") << out;
  std::printf("%s", out.substr(2).c_str());
  std::system(fmt::format("rm -rf '{}'", dir).c_str());
  // Two float32 states for every parameter that had a gradient.
  std::int64_t want = 0;
  for (const auto& p : ps) want += 2 * p.numel() * 4;
  EXPECT_EQ(adamw.state_bytes(), want);
  EXPECT_EQ(adamw.states_per_parameter(), 2);
}

TEST(AdamW, MatchesTorchOptimAdamWDefaults) { expect_same_as_torch_optim(AdamW::Options{}, 6); }

TEST(AdamW, MatchesTorchOptimAdamWLargerStepNoDecay) {
  AdamW::Options o;
  o.lr = 0.05;
  o.weight_decay = 0;
  o.beta2 = 0.99;
  expect_same_as_torch_optim(o, 6);
}

TEST(AdamW, StateMadeOnFirstStepWithAGradient) {
  auto ps = make_adamw_params();
  AdamW adamw(ps, AdamW::Options{});
  EXPECT_EQ(adamw.state_bytes(), 0);
  ps[0].mutable_grad() = torch::ones_like(ps[0]);
  adamw.step();
  EXPECT_EQ(adamw.state_bytes(), 2 * ps[0].numel() * 4);
}

}  // namespace
}  // namespace dtbench::train
