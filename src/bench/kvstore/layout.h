#pragma once
// How `dtbench kvstore` lays arrays out over K servers (pure, unit-tested).
// Like MXNet's kvstore: arrays of at least `bigarray_bound` elements are split
// into K equal slices, one per server; the others go whole, largest first, to
// the least-loaded server. Each slice or whole array is one key.
#include <cstddef>
#include <string>
#include <vector>

namespace dtbench::bench::kv {

struct KvArray {
  std::string name;
  std::size_t numel = 0;  // float32 elements
};

// One key: a slice [offset, offset + numel) of array `array`, held by `server`.
struct KvKey {
  int array = 0;
  std::size_t offset = 0;
  std::size_t numel = 0;
  int server = 0;
};

struct KvLayout {
  std::vector<KvArray> arrays;
  std::vector<std::size_t> array_offset;  // where each array starts in a worker's flat buffer
  std::size_t total_numel = 0;
  std::vector<KvKey> keys;                // in push order (array order, then slice)
  std::vector<std::size_t> server_numel;  // elements each server holds
};

// Throws UsageError for no arrays, an empty array, servers < 1.
KvLayout plan_layout(const std::vector<KvArray>& arrays, int servers, std::size_t bigarray_bound);

// `count` arrays of `bytes` each (a multiple of 4: float32). Throws UsageError.
std::vector<KvArray> uniform_arrays(int count, std::size_t bytes);

// Largest server load / mean server load (1.0 = perfectly balanced).
double imbalance(const KvLayout& layout);

}  // namespace dtbench::bench::kv
