#include "bench/comm/sweep.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::bench {

std::vector<std::uint64_t> size_sweep(const SweepOptions& opts) {
  if (opts.min_bytes > opts.max_bytes)
    throw UsageError(fmt::format("--min-bytes ({}) is larger than --max-bytes ({})",
                                 opts.min_bytes, opts.max_bytes));
  if (opts.increment == 0 && !(opts.factor > 1))
    throw UsageError(fmt::format("--step-factor must be greater than 1 (got {})", opts.factor));
  std::vector<std::uint64_t> sizes;
  std::uint64_t s = opts.min_bytes;
  while (s <= opts.max_bytes) {
    sizes.push_back(s);
    if (sizes.size() > 10000)
      throw UsageError(fmt::format(
          "--min-bytes {} to --max-bytes {} by {} is more than 10000 sizes (a larger --step-bytes or "
          "--step-factor)",
          opts.min_bytes, opts.max_bytes,
          opts.increment != 0 ? fmt::format("--step-bytes {}", opts.increment)
                              : fmt::format("--step-factor {}", opts.factor)));
    std::uint64_t next = 0;
    if (opts.increment != 0) {
      next = s + opts.increment;
    } else {
      const double scaled = static_cast<double>(s == 0 ? 1 : s) * opts.factor;
      next = scaled > 1.8e19 ? opts.max_bytes + 1 : static_cast<std::uint64_t>(scaled);
      if (s == 0) next = 1;
      if (next <= s) next = s + 1;
    }
    if (next < s) break;  // overflow
    s = next;
  }
  return sizes;
}

std::uint64_t element_count(std::uint64_t bytes, std::uint64_t elem_size) { return bytes / elem_size; }

std::uint64_t split_element_count(std::uint64_t bytes, std::uint64_t elem_size, std::uint64_t nranks,
                                  std::uint64_t align) {
  const std::uint64_t n = nranks == 0 ? 1 : nranks;
  const std::uint64_t a = align == 0 ? 1 : align;
  return bytes / elem_size / (a * n) * a * n;
}

std::int64_t buffer_windows(std::int64_t in_cap, std::int64_t in_count, std::int64_t out_cap, std::int64_t out_count) {
  std::int64_t w = out_count > 0 ? out_cap / out_count : out_cap;
  if (in_cap > 0 && in_count > 0) w = std::min(w, in_cap / in_count);
  return std::clamp<std::int64_t>(w, 1, kMaxBufferWindows);
}

}  // namespace dtbench::bench
