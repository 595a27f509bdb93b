#include "project/strategies.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/units.h"

namespace dtbench::project {

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::kDdp: return "ddp";
    case Strategy::kHorovod: return "horovod";
    case Strategy::kZero1: return "zero1";
    case Strategy::kZero2: return "zero2";
    case Strategy::kFsdp: return "fsdp";
  }
  return "?";
}

bool is_sharded(Strategy s) { return s == Strategy::kZero1 || s == Strategy::kZero2 || s == Strategy::kFsdp; }

Strategy parse_strategy(const std::string& text) {
  for (auto s : {Strategy::kDdp, Strategy::kHorovod, Strategy::kZero1, Strategy::kZero2, Strategy::kFsdp})
    if (text == strategy_name(s)) return s;
  throw UsageError(fmt::format(
      "--reducer: '{}' is not a strategy the projection knows (use ddp, horovod, zero1, zero2 or fsdp)", text));
}

std::vector<Strategy> parse_strategies(const std::string& text) {
  std::vector<Strategy> out;
  for (const auto& item : split_list(text)) {
    const auto s = parse_strategy(item);
    if (std::find(out.begin(), out.end(), s) != out.end())
      throw UsageError(fmt::format("--reducer: '{}' is given twice", item));
    out.push_back(s);
  }
  if (out.empty()) throw UsageError("--reducer: no strategy given");
  return out;
}

}  // namespace dtbench::project
