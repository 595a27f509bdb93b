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

// Rounds `bytes` down to whole elements of `elem_size`. Returns the count.
std::uint64_t element_count(std::uint64_t bytes, std::uint64_t elem_size);

// For collectives that split the buffer among `nranks` ranks (allgather,
// reduce_scatter, alltoall), as nccl-tests sizes them: each rank's part is
// the whole elements of `bytes` / nranks rounded down to a multiple of
// `align` elements. Returns the whole buffer's count (part * nranks).
std::uint64_t split_element_count(std::uint64_t bytes, std::uint64_t elem_size, std::uint64_t nranks,
                                  std::uint64_t align);

// How many consecutive windows of `in_count` and `out_count` elements fit
// in buffers of `in_cap` and `out_cap` (`in_cap` 0: no separate input, as in
// place): timed iteration i runs on window i mod this, as nccl-tests shifts
// its buffers by the message size each iteration. At least 1, at most
// kMaxBufferWindows (each window's tensors are made before the timed loop;
// 4,096 windows of a 4 KiB message already span 16 MiB).
constexpr std::int64_t kMaxBufferWindows = 4096;
std::int64_t buffer_windows(std::int64_t in_cap, std::int64_t in_count, std::int64_t out_cap, std::int64_t out_count);

}  // namespace dtbench::bench
