#include "bench/hybrid/hybrid_config.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::bench::hybrid {

void validate(const HybridOptions& o) {
  auto at_least = [](const char* flag, std::int64_t v, std::int64_t min) {
    if (v < min) throw UsageError(fmt::format("{} {} must be at least {}", flag, v, min));
  };
  if (o.device != "cpu" && o.device != "cuda")
    throw UsageError(fmt::format("--device '{}' must be cpu or cuda", o.device));
  if (o.lookup != "sequential" && o.lookup != "batched")
    throw UsageError(fmt::format("--lookup '{}' must be sequential or batched", o.lookup));
  at_least("--trainers", o.trainers, 1);
  at_least("--servers", o.servers, 1);
  at_least("--num-embeddings", o.num_embeddings, 1);
  at_least("--embedding-dim", o.embedding_dim, 1);
  at_least("--epochs", o.epochs, 1);
  at_least("--warmup", o.warmup, 0);
  at_least("--batches", o.batches, 1);
  if (!(o.lr > 0)) throw UsageError("--lr must be positive");
}

float initial_value(std::uint64_t seed, int server, std::int64_t row, int col) {
  // splitmix64 of the coordinates.
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(server) * 0xBF58476D1CE4E5B9ULL +
                    static_cast<std::uint64_t>(row) * 0x94D049BB133111EBULL + static_cast<std::uint64_t>(col);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<float>((z >> 40) & 0xFFFF) / 65536.0f - 0.5f;
}

Batch make_batch(std::mt19937_64& rng, std::int64_t num_embeddings) {
  auto uniform = [&](std::int64_t lo, std::int64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  Batch b;
  const auto n = uniform(kMinIndices, kMaxIndices);
  b.indices.resize(static_cast<std::size_t>(n));
  for (auto& i : b.indices) i = uniform(0, num_embeddings - 1);
  for (std::int64_t start = 0; start < n; start += uniform(1, kMaxBag)) b.offsets.push_back(start);
  b.targets.resize(b.offsets.size());
  for (auto& t : b.targets) t = uniform(0, kClasses - 1);
  return b;
}

void validate_bags(const std::int64_t* indices, std::size_t n, const std::int64_t* offsets,
                   std::size_t bags, std::int64_t rows) {
  if (bags == 0 || offsets[0] != 0) throw std::invalid_argument("the first bag must start at offset 0");
  for (std::size_t b = 1; b < bags; ++b)
    if (offsets[b] <= offsets[b - 1] || offsets[b] >= static_cast<std::int64_t>(n))
      throw std::invalid_argument(fmt::format("bag {} starts at {}, not after bag {} and before index {}", b,
                                              offsets[b], b - 1, n));
  for (std::size_t i = 0; i < n; ++i)
    if (indices[i] < 0 || indices[i] >= rows)
      throw std::invalid_argument(fmt::format("index {} is outside the table's {} rows", indices[i], rows));
}

LookupSum lookup_sum(const float* v, std::size_t n) {
  LookupSum s;
  for (std::size_t i = 0; i < n; ++i) {
    s.sum += v[i];
    s.weighted += v[i] * static_cast<double>(1 + i % 13);
    s.magnitude += std::fabs(v[i]);
  }
  return s;
}

bool same_lookup(const LookupSum& got, const LookupSum& want) {
  // The replay reproduces the server's arithmetic (the same sums in the same
  // order; bit for bit here): allow a few float ulps per value, no more. A
  // lookup one SGD step stale differs by ~1e-4 per touched value.
  const double ulps = 8 * static_cast<double>(std::numeric_limits<float>::epsilon()) * (1 + want.magnitude);
  return std::fabs(got.sum - want.sum) <= ulps && std::fabs(got.weighted - want.weighted) <= 13 * ulps &&
         std::fabs(got.magnitude - want.magnitude) <= ulps;
}

}  // namespace dtbench::bench::hybrid
