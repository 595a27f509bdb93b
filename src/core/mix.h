#pragma once
// splitmix64's finaliser: a well-mixed 64-bit value per input (test data,
// alltoallv's random parts). Pure.
#include <cstdint>

namespace dtbench {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace dtbench
