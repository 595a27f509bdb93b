#include "bench/comm/vsplit.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/mix.h"

namespace dtbench::bench {
VSplit parse_vsplit(const std::string& text) {
  VSplit v;
  v.text = text;
  if (text == "uniform") return v;
  if (text == "skewed") {
    v.kind = VSplit::Kind::kSkewed;
    return v;
  }
  if (text == "random" || text.rfind("random:", 0) == 0) {
    v.kind = VSplit::Kind::kRandom;
    if (text != "random") {
      const std::string digits = text.substr(7);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 18)
        throw UsageError(fmt::format("--split-sizes '{}': the seed after random: is a number", text));
      v.seed = std::stoull(digits);
    }
    return v;
  }
  throw UsageError(fmt::format("--split-sizes '{}' must be uniform, skewed, random or random:SEED", text));
}

std::vector<std::vector<std::int64_t>> vsplit_matrix(const VSplit& spec, int nranks, std::int64_t count,
                                                     std::uint64_t run_seed) {
  const auto n = static_cast<std::size_t>(std::max(nranks, 1));
  std::vector<std::vector<std::int64_t>> m(n, std::vector<std::int64_t>(n, 0));
  const std::uint64_t seed = spec.seed != 0 ? spec.seed : run_seed;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::int64_t> w(n, 1);
    for (std::size_t j = 0; j < n; ++j) {
      if (spec.kind == VSplit::Kind::kSkewed) w[j] = static_cast<std::int64_t>(1 + (i + j) % n);
      if (spec.kind == VSplit::Kind::kRandom)
        w[j] = static_cast<std::int64_t>(1 + splitmix64(seed ^ splitmix64(i * 1000003ULL + j)) % 8);
    }
    std::int64_t total = 0;
    for (auto x : w) total += x;
    std::int64_t given = 0;
    for (std::size_t j = 0; j < n; ++j) {
      m[i][j] = count * w[j] / total;
      given += m[i][j];
    }
    m[i][i] += count - given;  // the rounding's remainder stays home
  }
  return m;
}

std::vector<std::int64_t> vsplit_counts(const VSplit& spec, int nranks, std::int64_t count, std::uint64_t run_seed) {
  const auto n = static_cast<std::size_t>(std::max(nranks, 1));
  const std::uint64_t seed = spec.seed != 0 ? spec.seed : run_seed;
  std::vector<std::int64_t> w(n, 1);
  for (std::size_t i = 0; i < n; ++i) {
    if (spec.kind == VSplit::Kind::kSkewed) w[i] = static_cast<std::int64_t>(1 + i);
    if (spec.kind == VSplit::Kind::kRandom)
      w[i] = static_cast<std::int64_t>(1 + splitmix64(seed ^ splitmix64(0x5EEDULL + i)) % 8);
  }
  std::int64_t total = 0;
  for (auto x : w) total += x;
  std::vector<std::int64_t> parts(n, 0);
  std::int64_t given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    parts[i] = count * w[i] / total;
    given += parts[i];
  }
  parts[n - 1] += count - given;
  return parts;
}

}  // namespace dtbench::bench
