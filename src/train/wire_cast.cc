#include "train/wire_cast.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "core/error.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DTBENCH_X86_CASTS 1
#endif

namespace dtbench::train {
namespace {

#ifdef DTBENCH_X86_CASTS
#define DTBENCH_VEC __attribute__((target("avx2,f16c")))

// float32 -> bfloat16 bits, round to nearest even, NaN -> 0x7FC0 (as
// c10::BFloat16's constructor).
DTBENCH_VEC inline __m128i bf16_round(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7FC0), nan);
  // 8 x 32-bit (each < 2^16) -> 8 x 16-bit, in order.
  const __m256i packed = _mm256_packus_epi32(r, r);  // per 128-bit lane: r0..3 r0..3 | r4..7 r4..7
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));  // lanes 0 and 2
}

DTBENCH_VEC inline __m256 bf16_load(const std::uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

DTBENCH_VEC inline __m256 half_load(const std::uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

DTBENCH_VEC void to_half(const float* s, std::uint16_t* d, std::size_t n, float f) {
  const __m256 vf = _mm256_set1_ps(f);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_mul_ps(_mm256_loadu_ps(s + i), vf);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) d[i] = c10::Half(s[i] * f).x;
}

DTBENCH_VEC void to_bf16(const float* s, std::uint16_t* d, std::size_t n, float f) {
  const __m256 vf = _mm256_set1_ps(f);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), bf16_round(_mm256_mul_ps(_mm256_loadu_ps(s + i), vf)));
  for (; i < n; ++i) d[i] = c10::BFloat16(s[i] * f).x;
}

DTBENCH_VEC void from_16(const std::uint16_t* s, float* d, std::size_t n, float f, bool half) {
  const __m256 vf = _mm256_set1_ps(f);
  std::size_t i = 0;
  if (half)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_mul_ps(half_load(s + i), vf));
  else
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_mul_ps(bf16_load(s + i), vf));
  for (; i < n; ++i) {
    c10::Half h;
    c10::BFloat16 b;
    h.x = b.x = s[i];
    d[i] = (half ? static_cast<float>(h) : static_cast<float>(b)) * f;
  }
}

DTBENCH_VEC double max_abs_16(const std::uint16_t* s, std::size_t n, bool half) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 mx = _mm256_setzero_ps();
  __m256 bad = _mm256_setzero_ps();  // any NaN lane
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_andnot_ps(sign, half ? half_load(s + i) : bf16_load(s + i));
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    mx = _mm256_max_ps(mx, x);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, mx);
  float m = 0;
  for (float v : lanes) m = std::max(m, v);
  bool nan = _mm256_movemask_ps(bad) != 0;
  for (; i < n; ++i) {
    c10::Half h;
    c10::BFloat16 b;
    h.x = b.x = s[i];
    const float v = std::fabs(half ? static_cast<float>(h) : static_cast<float>(b));
    if (std::isnan(v)) nan = true;
    m = std::max(m, v);
  }
  if (nan || std::isinf(m)) return std::numeric_limits<double>::infinity();
  return m;
}

DTBENCH_VEC void sum_bf16_parts(const std::uint16_t* s, int ranks, std::size_t n, float* d) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int r = 0; r < ranks; ++r) acc = _mm256_add_ps(acc, bf16_load(s + static_cast<std::size_t>(r) * n + i));
    _mm256_storeu_ps(d + i, acc);
  }
  for (; i < n; ++i) {
    float acc = 0;
    for (int r = 0; r < ranks; ++r) {
      c10::BFloat16 b;
      b.x = s[static_cast<std::size_t>(r) * n + i];
      acc += static_cast<float>(b);
    }
    d[i] = acc;
  }
}

bool cpu_has_vector_casts() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return yes;
}
#else
bool cpu_has_vector_casts() { return false; }
#endif

bool is_16bit(const at::Tensor& t) {
  return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
}

// The vector loops apply to contiguous CPU tensors of the expected dtypes.
bool vector_path(CastPath path, const at::Tensor& a, const at::Tensor& b) {
  return path == CastPath::kAuto && cpu_has_vector_casts() && a.device().is_cpu() && b.device().is_cpu() &&
         a.is_contiguous() && b.is_contiguous();
}

std::uint16_t* bits(const at::Tensor& t) { return static_cast<std::uint16_t*>(t.data_ptr()); }

}  // namespace

bool vector_casts_available() { return cpu_has_vector_casts(); }

void to_wire(const at::Tensor& flat, const at::Tensor& wire, float factor, CastPath path) {
  DTBENCH_CHECK(flat.scalar_type() == at::kFloat && is_16bit(wire) && flat.numel() == wire.numel(),
                "to_wire: float32 gradients into a 16-bit wire of the same size");
#ifdef DTBENCH_X86_CASTS
  if (vector_path(path, flat, wire)) {
    const auto n = static_cast<std::size_t>(flat.numel());
    if (wire.scalar_type() == at::kHalf) to_half(flat.data_ptr<float>(), bits(wire), n, factor);
    else to_bf16(flat.data_ptr<float>(), bits(wire), n, factor);
    return;
  }
#endif
  at::mul_out(const_cast<at::Tensor&>(wire), flat, at::scalar_tensor(factor, flat.options()));
}

void from_wire(const at::Tensor& wire, const at::Tensor& flat, float factor, CastPath path) {
  DTBENCH_CHECK(flat.scalar_type() == at::kFloat && is_16bit(wire) && flat.numel() == wire.numel(),
                "from_wire: a 16-bit wire into float32 gradients of the same size");
#ifdef DTBENCH_X86_CASTS
  if (vector_path(path, flat, wire)) {
    from_16(bits(wire), flat.data_ptr<float>(), static_cast<std::size_t>(flat.numel()), factor,
            wire.scalar_type() == at::kHalf);
    return;
  }
#endif
  flat.copy_(wire);
  if (factor != 1.0f) flat.mul_(factor);
}

double max_abs(const at::Tensor& wire, CastPath path) {
  DTBENCH_CHECK(is_16bit(wire), "max_abs: a 16-bit tensor");
#ifdef DTBENCH_X86_CASTS
  if (vector_path(path, wire, wire))
    return max_abs_16(bits(wire), static_cast<std::size_t>(wire.numel()), wire.scalar_type() == at::kHalf);
#endif
  const double m = wire.abs().max().item<double>();
  return std::isfinite(m) ? m : std::numeric_limits<double>::infinity();
}

void sum_parts(const at::Tensor& gathered, int ranks, const at::Tensor& flat, CastPath path) {
  DTBENCH_CHECK(flat.scalar_type() == at::kFloat && is_16bit(gathered) && ranks >= 1 &&
                    gathered.numel() == flat.numel() * ranks,
                "sum_parts: `ranks` 16-bit parts the size of the float32 result");
#ifdef DTBENCH_X86_CASTS
  if (gathered.scalar_type() == at::kBFloat16 && vector_path(path, gathered, flat)) {
    sum_bf16_parts(bits(gathered), ranks, static_cast<std::size_t>(flat.numel()), flat.data_ptr<float>());
    return;
  }
#endif
  flat.copy_(gathered.view({ranks, -1}).to(at::kFloat).sum(0));
}

void add_compression_error(CompressionStats& stats, const at::Tensor& got, const at::Tensor& exact) {
  const auto e = exact.to(at::kDouble).reshape({-1});
  const auto diff = got.to(at::kDouble).reshape({-1}) - e;
  stats.measured = true;
  stats.max_abs_error = std::max(stats.max_abs_error, diff.abs().max().item<double>());
  stats.max_abs_exact = std::max(stats.max_abs_exact, e.abs().max().item<double>());
  stats.sum_sq_error += diff.pow(2).sum().item<double>();
  stats.sum_sq_exact += e.pow(2).sum().item<double>();
}

trace::WireDType wire_dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kHalf:
      return trace::WireDType::kFloat16;
    case at::kBFloat16:
      return trace::WireDType::kBFloat16;
    default:
      return trace::WireDType::kFloat32;
  }
}

}  // namespace dtbench::train
