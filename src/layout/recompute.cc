#include "layout/recompute.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::layout {

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kFull: return "full";
    case Recompute::kSelective: return "selective";
  }
  return "?";
}

Recompute parse_recompute(const std::string& name) {
  for (auto r : {Recompute::kNone, Recompute::kFull, Recompute::kSelective})
    if (name == recompute_name(r)) return r;
  throw UsageError(
      fmt::format("--activation-checkpointing: '{}' is not a mode (use none, full or selective)", name));
}

}  // namespace dtbench::layout
