// The compression casts' vector loops (train/wire_cast) give exactly the bits
// of LibTorch's own ops: float16 and bfloat16, with scaling, overflow to
// infinity, NaN, subnormals, signed zeros, ties for rounding, lengths that
// are not a multiple of the vector width, and the bfloat16 sum of 1-4 parts
// (any NaN counts as equal to any NaN).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "train/wire_cast.h"

namespace dtbench::train {
namespace {

// Values that exercise the rounding and special cases, then random ones of
// many magnitudes; n elements in all.
torch::Tensor awkward_floats(int64_t n, std::uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto t = torch::randn({n}, gen, torch::kFloat) * torch::exp2(torch::randint(-30, 30, {n}, gen).to(torch::kFloat));
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65520.0f, 70000.0f, -1e6f, inf, -inf,
                            std::nanf(""), 5.96e-8f, 2.98e-8f, 1e-40f, -1e-40f, 1.00048828125f /* tie */,
                            3.0e38f, 1.0f + 0x1p-8f /* bf16 tie */, 1.0f + 0x1p-7f + 0x1p-8f};
  auto a = t.accessor<float, 1>();
  for (std::size_t i = 0; i < sizeof(specials) / sizeof(float) && static_cast<int64_t>(i) < n; ++i)
    a[static_cast<int64_t>(i)] = specials[i];
  return t;
}

// Equal bits, or both NaN (LibTorch itself writes a NaN as 0x7FC0 in its
// scalar bfloat16 conversion and as 0xFFFF in its vectorized one; a NaN
// gradient is lost either way). Otherwise says where they first differ.
::testing::AssertionResult same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.numel() != b.numel() || a.scalar_type() != b.scalar_type())
    return ::testing::AssertionFailure() << "different sizes or dtypes";
  const auto esz = static_cast<std::size_t>(a.element_size());
  const auto* pa = static_cast<const unsigned char*>(a.data_ptr());
  const auto* pb = static_cast<const unsigned char*>(b.data_ptr());
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(pa + i * esz, pb + i * esz, esz) != 0 &&
        !(std::isnan(a[i].item<double>()) && std::isnan(b[i].item<double>())))
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i].item<double>() << " vs "
                                           << b[i].item<double>();
  return ::testing::AssertionSuccess();
}

class WireCast : public ::testing::TestWithParam<torch::ScalarType> {
 protected:
  void SetUp() override {
    if (!vector_casts_available()) GTEST_SKIP() << "no AVX2 + F16C on this CPU: only LibTorch's path runs";
  }
};

TEST_P(WireCast, ToWireMatchesLibTorch) {
  for (int64_t n : {1, 7, 8, 9, 64, 1001}) {
    const auto flat = awkward_floats(n, static_cast<std::uint64_t>(n));
    for (float factor : {1.0f, 0.5f, 0x1p-20f, 4096.0f}) {
      auto fast = torch::empty({n}, torch::dtype(GetParam()));
      auto ref = torch::empty({n}, torch::dtype(GetParam()));
      to_wire(flat, fast, factor, CastPath::kAuto);
      to_wire(flat, ref, factor, CastPath::kTorch);
      EXPECT_TRUE(same_bits(fast, ref)) << "n " << n << " factor " << factor;
    }
  }
}

TEST_P(WireCast, FromWireAndMaxAbsMatchLibTorch) {
  for (int64_t n : {1, 7, 8, 9, 64, 1001}) {
    // Every 16-bit pattern appears in the long case.
    auto wire = n == 1001 ? torch::arange(0, 65536, torch::kInt32).to(torch::kInt16).view(GetParam())
                          : awkward_floats(n, 7).to(GetParam());
    const int64_t m = wire.numel();
    for (float factor : {1.0f, 0x1p-10f}) {
      auto fast = torch::empty({m}, torch::kFloat), ref = torch::empty({m}, torch::kFloat);
      from_wire(wire, fast, factor, CastPath::kAuto);
      from_wire(wire, ref, factor, CastPath::kTorch);
      EXPECT_TRUE(same_bits(fast, ref)) << "n " << m << " factor " << factor;
    }
    EXPECT_EQ(max_abs(wire, CastPath::kAuto), max_abs(wire, CastPath::kTorch)) << "n " << m;
    // Without the non-finite values the maximum is a number, and the same.
    auto finite = wire.to(torch::kFloat);
    finite.masked_fill_(finite.isfinite().logical_not(), 1.5f);
    const auto fw = finite.to(GetParam());
    const double mx = max_abs(fw, CastPath::kAuto);
    EXPECT_TRUE(std::isfinite(mx));
    EXPECT_EQ(mx, max_abs(fw, CastPath::kTorch));
  }
}

TEST_P(WireCast, SumOfPartsMatchesLibTorch) {
  for (int ranks : {1, 2, 3, 4})
    for (int64_t n : {1, 9, 1000}) {
      const auto gathered = awkward_floats(n * ranks, 11).to(GetParam());
      auto fast = torch::empty({n}, torch::kFloat), ref = torch::empty({n}, torch::kFloat);
      sum_parts(gathered, ranks, fast, CastPath::kAuto);
      sum_parts(gathered, ranks, ref, CastPath::kTorch);
      EXPECT_TRUE(same_bits(fast, ref)) << ranks << " parts of " << n;
    }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, WireCast, ::testing::Values(torch::kHalf, torch::kBFloat16),
                         [](const auto& info) { return info.param == torch::kHalf ? "float16" : "bfloat16"; });

}  // namespace
}  // namespace dtbench::train
