#include "bench/hybrid/hybrid_config.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::bench::hybrid {

void validate(const HybridOptions& o) {
  auto at_least = [](const char* flag, std::int64_t v, std::int64_t min) {
    if (v < min) throw UsageError(fmt::format("{} {} must be at least {}", flag, v, min));
  };
  if (o.device != "cpu" && o.device != "cuda")
    throw UsageError(fmt::format("--device '{}' must be cpu or cuda", o.device));
  at_least("--trainers", o.trainers, 1);
  at_least("--servers", o.servers, 1);
  at_least("--tables", o.tables, 1);
  at_least("--num-embeddings", o.num_embeddings, o.servers);
  at_least("--embedding-dim", o.embedding_dim, 1);
  at_least("--batch-size", o.batch_size, 1);
  at_least("--hidden", o.hidden, 1);
  at_least("--iters", o.iters, 1);
  at_least("--warmup", o.warmup, 0);
  if (!(o.lr > 0)) throw UsageError("--lr must be positive");
}

float initial_value(std::uint64_t seed, int table, std::int64_t row, int col) {
  // splitmix64 of the coordinates.
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(table) * 0xBF58476D1CE4E5B9ULL +
                    static_cast<std::uint64_t>(row) * 0x94D049BB133111EBULL + static_cast<std::uint64_t>(col);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<float>((z >> 40) & 0xFFFF) / 65536.0f - 0.5f;
}

}  // namespace dtbench::bench::hybrid
