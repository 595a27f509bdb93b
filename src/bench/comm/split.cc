#include "bench/comm/split.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::bench {

SplitSpec parse_split(const std::string& text) {
  SplitSpec s;
  s.text = text;
  if (text.empty()) return s;
  const auto colon = text.find(':');
  const std::string form = colon == std::string::npos ? "" : text.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : text.substr(colon + 1);
  const auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("--split '{}': {} (mod:N, div:N or and:MASK, as nccl-tests' NCCL_TESTS_SPLIT)",
                                  text, why));
  };
  if (form == "mod") s.kind = SplitSpec::Kind::kMod;
  else if (form == "div") s.kind = SplitSpec::Kind::kDiv;
  else if (form == "and") s.kind = SplitSpec::Kind::kAnd;
  else throw bad("unknown form");
  std::size_t used = 0;
  try {
    s.value = std::stoll(arg, &used, 0);  // base 0: 0x hex for masks
  } catch (const std::exception&) {
    used = 0;
  }
  if (arg.empty() || used != arg.size()) throw bad(fmt::format("'{}' is not a number", arg));
  if (s.kind != SplitSpec::Kind::kAnd && s.value < 1) throw bad("N must be at least 1");
  if (s.kind == SplitSpec::Kind::kAnd && s.value < 0) throw bad("the mask must not be negative");
  return s;
}

long long split_colour(const SplitSpec& spec, int rank) {
  switch (spec.kind) {
    case SplitSpec::Kind::kMod:
      return rank % spec.value;
    case SplitSpec::Kind::kDiv:
      return rank / spec.value;
    case SplitSpec::Kind::kAnd:
      return rank & spec.value;
    case SplitSpec::Kind::kNone:
    default:
      return 0;
  }
}

std::vector<std::vector<int>> split_groups(const SplitSpec& spec, int world_size) {
  std::map<long long, std::vector<int>> by_colour;
  for (int r = 0; r < world_size; ++r) by_colour[split_colour(spec, r)].push_back(r);
  std::vector<std::vector<int>> out;
  for (auto& [colour, ranks] : by_colour) out.push_back(std::move(ranks));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return out;
}

}  // namespace dtbench::bench
