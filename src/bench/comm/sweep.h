#pragma once
// Message-size sweep of `dtbench comm`, as nccl-tests does it: from min to max
// bytes, multiplying by `factor` (> 1) or, when `increment` is non-zero,
// adding it. Pure.
#include <cstdint>
#include <vector>

namespace dtbench::bench {

struct SweepOptions {
  std::uint64_t min_bytes = 32;         // first size. Default 32 B.
  std::uint64_t max_bytes = 32 << 20;   // last size (inclusive). Default 32 MiB.
  double factor = 2;                    // multiply each step by this. Default 2.
  std::uint64_t increment = 0;          // add this instead, when non-zero. Default 0.
};

// The sizes, ascending, always including min_bytes; max_bytes when reached
// exactly. Throws UsageError when min > max, factor <= 1 without an
// increment, or the sweep has more than 10,000 points.
std::vector<std::uint64_t> size_sweep(const SweepOptions& opts);

// Rounds `bytes` down to whole elements of `elem_size`, and the element count
// down to a multiple of `multiple` (the world size, for collectives that split
// the buffer across ranks). Returns the element count.
std::uint64_t element_count(std::uint64_t bytes, std::uint64_t elem_size, std::uint64_t multiple);

}  // namespace dtbench::bench
