#include "bench/kvstore/layout.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::bench::kv {

KvLayout plan_layout(const std::vector<KvArray>& arrays, int servers, std::size_t bigarray_bound) {
  if (arrays.empty()) throw UsageError("kvstore: no arrays to push");
  if (servers < 1) throw UsageError("kvstore: the dist modes need at least one server (--servers)");
  if (bigarray_bound < 1) throw UsageError("--bigarray-bound must be at least 1");
  KvLayout l;
  l.arrays = arrays;
  l.server_numel.assign(servers, 0);
  for (const auto& a : arrays) {
    if (a.numel == 0) throw UsageError(fmt::format("kvstore: array '{}' is empty", a.name));
    l.array_offset.push_back(l.total_numel);
    l.total_numel += a.numel;
  }
  // Big arrays first: split evenly (the first slices one element longer).
  std::vector<std::vector<KvKey>> per_array(arrays.size());
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const auto n = arrays[i].numel;
    if (servers > 1 && n >= bigarray_bound && n >= static_cast<std::size_t>(servers)) {
      std::size_t off = 0;
      for (int s = 0; s < servers; ++s) {
        const std::size_t len = n / servers + (static_cast<std::size_t>(s) < n % servers ? 1 : 0);
        per_array[i].push_back({static_cast<int>(i), off, len, s});
        l.server_numel[s] += len;
        off += len;
      }
    }
  }
  // Then the rest, largest first, each to the least-loaded server.
  std::vector<std::size_t> order(arrays.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return arrays[a].numel > arrays[b].numel; });
  for (auto i : order) {
    if (!per_array[i].empty()) continue;
    const auto s = static_cast<int>(
        std::min_element(l.server_numel.begin(), l.server_numel.end()) - l.server_numel.begin());
    per_array[i].push_back({static_cast<int>(i), 0, arrays[i].numel, s});
    l.server_numel[s] += arrays[i].numel;
  }
  for (auto& keys : per_array)
    for (auto& k : keys) l.keys.push_back(k);
  return l;
}

std::vector<KvArray> uniform_arrays(int count, std::size_t bytes) {
  if (count < 1) throw UsageError(fmt::format("--arrays {} must be at least 1", count));
  if (bytes < 4 || bytes % 4 != 0)
    throw UsageError(fmt::format("--size {} must be a positive multiple of 4 bytes (float32)", bytes));
  std::vector<KvArray> out;
  for (int i = 0; i < count; ++i) out.push_back({fmt::format("array{}", i), bytes / 4});
  return out;
}

double imbalance(const KvLayout& l) {
  if (l.server_numel.empty()) return 1.0;
  const double total = static_cast<double>(
      std::accumulate(l.server_numel.begin(), l.server_numel.end(), std::size_t{0}));
  const double mean = total / static_cast<double>(l.server_numel.size());
  const double mx = static_cast<double>(*std::max_element(l.server_numel.begin(), l.server_numel.end()));
  return mean > 0 ? mx / mean : 1.0;
}

}  // namespace dtbench::bench::kv
