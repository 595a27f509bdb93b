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

SplitSpec parse_groups(const std::string& text) {
  SplitSpec s;
  s.kind = SplitSpec::Kind::kMesh;
  s.text = text;
  const auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("--groups '{}': {} (DIM[=K][,DIM=K...] over tp, dp and pp; the first names the "
                                  "groups that run, e.g. tp=2 or dp,tp=2)",
                                  text, why));
  };
  std::size_t start = 0;
  bool first = true;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    const auto eq = item.find('=');
    const std::string name = item.substr(0, eq);
    layout::Dim dim{};
    int* degree = nullptr;
    if (name == "tp") dim = layout::Dim::kTp, degree = &s.tp;
    else if (name == "dp") dim = layout::Dim::kDp, degree = &s.dp;
    else if (name == "pp") dim = layout::Dim::kPp, degree = &s.pp;
    else throw bad(fmt::format("'{}' is not tp, dp or pp", name));
    if (*degree != 0 || (!first && dim == s.dim)) throw bad(fmt::format("{} is named twice", name));
    if (first) s.dim = dim;
    first = false;
    if (eq == std::string::npos) {
      *degree = -1;  // named, degree not given
      continue;
    }
    const std::string arg = item.substr(eq + 1);
    std::size_t used = 0;
    int k = 0;
    try {
      k = std::stoi(arg, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (arg.empty() || used != arg.size()) throw bad(fmt::format("'{}' is not a number", arg));
    if (k < 1) throw bad(fmt::format("{}={} must be at least 1", name, k));
    *degree = k;
  }
  for (int* d : {&s.tp, &s.pp, &s.dp})
    if (*d < 0) *d = 0;
  return s;
}

std::string describe_split(const SplitSpec& spec) {
  if (spec.kind == SplitSpec::Kind::kNone) return "";
  return fmt::format("{} {}", spec.kind == SplitSpec::Kind::kMesh ? "--groups" : "--split", spec.text);
}

namespace {

layout::ParallelDims mesh_of(const SplitSpec& spec, int world_size) {
  layout::ParallelDims dims;
  try {
    dims = layout::ParallelDims::of_world(world_size, spec.tp > 0 ? spec.tp : 1, spec.pp > 0 ? spec.pp : 1);
  } catch (const UsageError&) {
    throw UsageError(fmt::format("--groups '{}': tp {} x pp {} does not divide the {} ranks", spec.text,
                                 spec.tp > 0 ? spec.tp : 1, spec.pp > 0 ? spec.pp : 1, world_size));
  }
  if (spec.dp > 0 && spec.dp != dims.dp)
    throw UsageError(fmt::format("--groups '{}': pp {} x dp {} x tp {} is {} ranks, not the job's {}", spec.text,
                                 dims.pp, spec.dp, dims.tp, dims.pp * spec.dp * dims.tp, world_size));
  if (dims.degree(spec.dim) == 1 && world_size > 1)
    throw UsageError(fmt::format("--groups '{}': {} is 1 here, so every group would be one rank (give its degree: "
                                 "{}=K)",
                                 spec.text, layout::to_string(spec.dim), layout::to_string(spec.dim)));
  return dims;
}

}  // namespace

long long split_colour(const SplitSpec& spec, int rank) {
  switch (spec.kind) {
    case SplitSpec::Kind::kMod:
      return rank % spec.value;
    case SplitSpec::Kind::kDiv:
      return rank / spec.value;
    case SplitSpec::Kind::kAnd:
      return rank & spec.value;
    case SplitSpec::Kind::kMesh:
      DTBENCH_CHECK(false, "split_colour: a mesh's groups depend on the world size (split_groups)");
      return 0;
    case SplitSpec::Kind::kNone:
    default:
      return 0;
  }
}

std::vector<std::vector<int>> split_groups(const SplitSpec& spec, int world_size) {
  if (spec.kind == SplitSpec::Kind::kMesh) return mesh_of(spec, world_size).groups(spec.dim);
  std::map<long long, std::vector<int>> by_colour;
  for (int r = 0; r < world_size; ++r) by_colour[split_colour(spec, r)].push_back(r);
  std::vector<std::vector<int>> out;
  for (auto& [colour, ranks] : by_colour) out.push_back(std::move(ranks));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return out;
}

}  // namespace dtbench::bench
