// Gradient compression of dtbench's own buckets on real backends: float16
// and bfloat16 averages are close to the float32 ones (and not identical:
// the compression really happened), a float16 overflow is caught, reduced
// again in float32 and the scale lowered, tiny gradients are scaled up, the
// error probe measures what it should, every rank gets identical bytes, and
// training with compression stays close to one process with the whole batch.
// Also: the gradients are views of their bucket (GradBuckets).
//   compression_test --backend gloo|mpi   (inside a launched job)
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "comm/communicator.h"
#include "support/comm_test_main.h"
#include "support/train_fixtures.h"
#include "train/grad_buckets.h"
#include "train/replicas.h"
#include "train/trainer.h"

namespace dtbench {
namespace {

std::unique_ptr<comm::Communicator> g_comm;

// Two parameters in one bucket; rank r's gradients are (r + 1) * base.
struct Fixture {
  std::vector<torch::Tensor> params;
  std::vector<torch::Tensor> base;
  explicit Fixture(double magnitude, int64_t n0 = 300, int64_t n1 = 77) {
    auto gen = at::detail::createCPUGenerator(42);  // same on every rank
    for (int64_t n : {n0, n1}) {
      auto p = torch::zeros({n}, torch::requires_grad());
      params.push_back(p);
      base.push_back(torch::randn({n}, gen, torch::kFloat) * magnitude);
    }
  }
  void set_grads() {
    const double r = g_comm->rank() + 1;
    for (std::size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = base[i] * r;
  }
  // The exact average over ranks: base * mean(1..n).
  double rel_error() const {
    const double f = (g_comm->size() + 1) / 2.0;
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const auto exact = base[i].to(torch::kDouble) * f;
      err = std::max(err, (params[i].grad().to(torch::kDouble) - exact).abs().max().item<double>());
      ref = std::max(ref, exact.abs().max().item<double>());
    }
    return err / ref;
  }
  void reduce(train::GradBuckets& b) {
    set_grads();
    b.reset();
    b.fill(0);
    b.launch(0);
    b.finish();
  }
};

std::unique_ptr<train::GradBuckets> buckets(Fixture& f, train::Compression c) {
  return std::make_unique<train::GradBuckets>(f.params, std::vector<std::vector<size_t>>{{0, 1}},
                                              *g_comm, c);
}

// Every rank holds the same bytes: the allgathered gradients are all equal.
void expect_identical_on_all_ranks(const torch::Tensor& t) {
  const int n = g_comm->size();
  auto all = torch::empty({n * t.numel()}, t.options());
  g_comm->allgather(t.contiguous(), all)->wait(g_comm->timeout());
  for (int r = 1; r < n; ++r)
    EXPECT_TRUE(torch::equal(all.narrow(0, 0, t.numel()), all.narrow(0, r * t.numel(), t.numel())))
        << "rank " << r << " got other bytes than rank 0";
}

TEST(Compression, Fp16AverageIsCloseButCompressed) {
  Fixture f(0.01);
  auto b = buckets(f, train::Compression::kFp16);
  f.reduce(*b);  // scale 1
  f.reduce(*b);  // scale adapted
  const double err = f.rel_error();
  EXPECT_LT(err, 2e-3);
  EXPECT_GT(err, 0) << "bit-exact: the gradients did not go through float16";
  EXPECT_EQ(b->stats().overflows, 0);
  EXPECT_GT(b->stats().max_scale, 1) << "the scale never adapted to small gradients";
  expect_identical_on_all_ranks(f.params[0].grad());
}

TEST(Compression, Fp16OverflowIsReducedAgainInFloat32) {
  Fixture f(1.0);
  f.base[1][3] = 1e6;  // past float16's 65504 even after dividing by the world size
  auto b = buckets(f, train::Compression::kFp16);
  f.reduce(*b);
  EXPECT_EQ(b->stats().overflows, 1);
  EXPECT_LT(f.rel_error(), 1e-6) << "the fallback must be the float32 average";
  f.reduce(*b);  // lowered scale: no second overflow
  EXPECT_EQ(b->stats().overflows, 1);
  EXPECT_LT(f.rel_error(), 2e-3);
  EXPECT_LT(b->stats().min_scale, 1);
  for (const auto& p : f.params) EXPECT_TRUE(torch::isfinite(p.grad()).all().item<bool>());
}

TEST(Compression, Fp16TinyGradientsAreScaledUp) {
  Fixture f(1e-7);  // mostly float16 subnormals at scale 1
  auto b = buckets(f, train::Compression::kFp16);
  f.reduce(*b);
  const double first = f.rel_error();
  f.reduce(*b);
  const double second = f.rel_error();
  EXPECT_GT(first, 1e-2) << "at scale 1 these gradients should lose precision in float16";
  EXPECT_LT(second, 2e-3) << "the scale did not bring them into float16's range";
}

TEST(Compression, Bf16AverageIsCloseAndIdenticalOnAllRanks) {
  Fixture f(0.5);
  auto b = buckets(f, train::Compression::kBf16);
  f.reduce(*b);
  const double err = f.rel_error();
  EXPECT_LT(err, 1e-2);
  EXPECT_GT(err, 0);
  expect_identical_on_all_ranks(f.params[1].grad());
}

TEST(Compression, ProbeMeasuresTheErrorAgainstFloat32) {
  for (auto c : {train::Compression::kFp16, train::Compression::kBf16}) {
    Fixture f(0.01);
    auto b = buckets(f, c);
    f.reduce(*b);
    EXPECT_FALSE(b->stats().measured);
    b->set_probe(true);
    f.reduce(*b);
    const auto& s = b->stats();
    ASSERT_TRUE(s.measured);
    EXPECT_GT(s.max_rel_error(), 0);
    EXPECT_NEAR(s.max_rel_error(), f.rel_error(), 1e-6) << "probe disagrees with the exact error";
    EXPECT_GT(s.rel_l2_error(), 0);
  }
}

// Also horovod's fp16 (Compression.fp16, no scaling): its background loop
// runs the probe's float32 reductions beside the fused groups.
TEST(Compression, TrainingStaysCloseToOneProcess) {
  const std::pair<const char*, const char*> cases[] = {{"sync", "fp16"}, {"sync", "bf16"}, {"horovod", "fp16"}};
  for (const auto& [reducer, c] : cases) {
    auto o = testing::small_mlp_options(reducer);
    o.compression = c;
    auto model = train::make_seeded_model(o);
    const auto result = train::train(o, *model, g_comm.get(), g_comm->size(), g_comm->rank());
    EXPECT_NO_THROW(train::verify_replicas(*g_comm, *model->module(), result.buffers_in_step)) << c;
    EXPECT_TRUE(result.compression.measured) << c;
    EXPECT_EQ(result.compression.dtype, c);
    EXPECT_LT(result.compression.max_rel_error(), 2e-2) << c;

    auto ref = o;
    ref.reducer = "none";
    ref.compression = "none";
    ref.fusion_threshold_mb = ref.cycle_time_ms = -1;
    ref.batch_size = o.batch_size * g_comm->size();
    ref.iters = 4;  // the probe iteration trains too
    auto ref_model = train::make_seeded_model(ref);
    train::train(ref, *ref_model, nullptr, 1, 0);
    auto a = model->module()->parameters(), r = ref_model->module()->parameters();
    double d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, (a[i] - r[i]).abs().max().item<double>());
    EXPECT_LT(d, 5e-3) << c << ": compressed training drifted from the float32 reference";
  }
}

// Gradients live in the bucket: autograd accumulates into the bucket's
// slots (a channels-last weight's slot keeps its strides), the average is
// left there, and a gradient replaced by another tensor is copied in and
// becomes a view of its slot again.
TEST(GradBuckets, GradientsAreViewsOfTheBucket) {
  auto w = torch::zeros({4, 3, 2, 2}).contiguous(at::MemoryFormat::ChannelsLast).requires_grad_();
  auto v = torch::zeros({7}, torch::requires_grad());
  train::GradBuckets b({w, v}, {{0, 1}}, *g_comm);
  ASSERT_TRUE(w.grad().defined());
  EXPECT_TRUE(w.grad().is_alias_of(v.grad())) << "the two gradients are not in one bucket";
  EXPECT_EQ(w.grad().strides(), w.strides()) << "the slot lost the channels-last layout";

  const double r = g_comm->rank() + 1, mean = (g_comm->size() + 1) / 2.0;
  auto cw = torch::arange(w.numel(), torch::kFloat).view(w.sizes());
  auto cv = torch::arange(v.numel(), torch::kFloat);
  auto reduce = [&] {
    b.reset();
    b.fill(0);
    b.launch(0);
    b.finish();
  };
  ((w * cw).sum() * r + (v * cv).sum() * r).backward();  // accumulates in place
  const auto* slot = w.grad().data_ptr<float>();
  reduce();
  EXPECT_EQ(w.grad().data_ptr<float>(), slot);
  EXPECT_TRUE(torch::allclose(w.grad(), cw * mean));
  EXPECT_TRUE(torch::allclose(v.grad(), cv * mean));

  v.mutable_grad() = torch::full({7}, r);  // replaced: copied in, re-pointed after
  w.mutable_grad().zero_();
  reduce();
  EXPECT_TRUE(v.grad().is_alias_of(w.grad())) << "the replaced gradient did not return to its slot";
  EXPECT_TRUE(torch::allclose(v.grad(), torch::full({7}, mean)));
  EXPECT_TRUE(torch::allclose(w.grad(), torch::zeros_like(w)));
}

}  // namespace
}  // namespace dtbench

int main(int argc, char** argv) {
  torch::set_num_threads(1);
  return dtbench::testing::run_comm_tests(argc, argv, "compression_test", dtbench::g_comm);
}
