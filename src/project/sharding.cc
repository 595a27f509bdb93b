#include "project/sharding.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/units.h"

namespace dtbench::project {

const char* sharding_name(Sharding s) {
  switch (s) {
    case Sharding::kDdp: return "ddp";
    case Sharding::kZero1: return "zero1";
    case Sharding::kZero2: return "zero2";
    case Sharding::kFsdp: return "fsdp";
  }
  return "?";
}

Sharding parse_sharding(const std::string& text) {
  for (auto s : {Sharding::kDdp, Sharding::kZero1, Sharding::kZero2, Sharding::kFsdp})
    if (text == sharding_name(s)) return s;
  throw UsageError(fmt::format("--reducer: '{}' is not a strategy the projection knows (use ddp, zero1, zero2 or fsdp)",
                               text));
}

std::vector<Sharding> parse_shardings(const std::string& text) {
  std::vector<Sharding> out;
  for (const auto& item : split_list(text)) {
    const auto s = parse_sharding(item);
    if (std::find(out.begin(), out.end(), s) != out.end())
      throw UsageError(fmt::format("--reducer: '{}' is given twice", item));
    out.push_back(s);
  }
  if (out.empty()) throw UsageError("--reducer: no strategy given");
  return out;
}

}  // namespace dtbench::project
