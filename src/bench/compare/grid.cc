#include "bench/compare/grid.h"

#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "train/train_options.h"

namespace dtbench::bench {
namespace {

template <typename T>
void require_unique(const std::vector<T>& xs, const char* flag) {
  if (xs.empty()) throw UsageError(fmt::format("{}: empty list", flag));
  std::set<T> seen;
  for (const auto& x : xs)
    if (!seen.insert(x).second) throw UsageError(fmt::format("{}: '{}' is listed twice", flag, x));
}

}  // namespace

Grid expand_grid(const GridSpec& spec) {
  require_unique(spec.models, "--models");
  require_unique(spec.world_sizes, "--world-sizes");
  require_unique(spec.reducers, "--reducers");
  require_unique(spec.bucket_caps_mb, "--bucket-cap-mb");
  require_unique(spec.compressions, "--compression");
  require_unique(spec.amps, "--amp");
  require_unique(spec.acs, "--activation-checkpointing");
  for (const auto& r : spec.reducers) {
    bool known = false;
    for (const char* name : train::kReducerNames) known = known || r == name;
    if (!known || r == "none")
      throw UsageError(fmt::format(
          "--reducers: '{}' is not one of ddp, overlap, sync, allreduce-after-backward, zero1, zero2, "
          "fsdp",
          r));
  }
  for (const auto& c : spec.compressions) {
    bool known = false;
    for (const char* name : train::kCompressionNames) known = known || c == name;
    if (!known)
      throw UsageError(fmt::format("--compression: '{}' is not one of none, fp16, bf16", c));
  }
  for (const auto& a : spec.amps)
    if (a != "none" && a != "bf16" && a != "fp16")
      throw UsageError(fmt::format("--amp: '{}' is not one of none, bf16, fp16", a));
  for (const auto& a : spec.acs)
    if (a != "none" && a != "full" && a != "selective")
      throw UsageError(fmt::format("--activation-checkpointing: '{}' is not one of none, full, selective", a));
  for (double b : spec.bucket_caps_mb)
    if (!(b > 0) || b > 65536)
      throw UsageError(fmt::format("--bucket-cap-mb: {} must be > 0 and at most 65536", b));
  for (int w : spec.world_sizes)
    if (w < 1 || w > 1024)
      throw UsageError(fmt::format("--world-sizes: {} must be between 1 and 1024", w));

  Grid grid;
  for (const auto& c : spec.compressions)
    for (const auto& r : spec.reducers)
      if (c != "none" && !train::reducer_supports_compression(r))
        grid.skipped.push_back(fmt::format(
            "{}+{}: skipped (compression is done by dtbench's own reducers: overlap, sync, "
            "allreduce-after-backward, and horovod's fp16)",
            r, c));
      else if (r == "horovod" && c == "bf16")
        grid.skipped.push_back("horovod+bf16: skipped (Horovod 0.28 compresses to fp16 only)");
  // fp16's loss scaler would need its skip decision agreed across gradient
  // shards (train::validate refuses the pair for one run).
  auto amp_skipped = [](const std::string& r, const std::string& a) {
    return a == "fp16" && train::is_sharded(r);
  };
  for (const auto& a : spec.amps)
    for (const auto& r : spec.reducers)
      if (amp_skipped(r, a))
        grid.skipped.push_back(fmt::format(
            "{}+amp-fp16: skipped (the loss scaler's skip decision is not agreed across gradient "
            "shards; sharded strategies take --amp bf16)",
            r));
  for (const auto& m : spec.models)
    for (double b : spec.bucket_caps_mb)
      for (const auto& c : spec.compressions)
        for (const auto& a : spec.amps)
          for (const auto& ac : spec.acs)
            for (const auto& r : spec.reducers) {
              if (c != "none" && !train::reducer_supports_compression(r)) continue;
              if (r == "horovod" && c == "bf16") continue;
              if (amp_skipped(r, a)) continue;
              for (int w : spec.world_sizes) {
                report::PointKey k;
                k.model = m;
                k.world_size = w;
                k.reducer = r;
                k.bucket_cap_mb = b;
                k.compression = c;
                k.amp = a;
                k.ac = ac;
                grid.points.push_back(k);
              }
            }
  if (grid.points.empty())
    throw UsageError("the grid has no point that can run (every reducer/compression/amp combination is skipped)");
  return grid;
}

std::vector<report::PointKey> remaining_points(const Grid& grid,
                                               const std::vector<report::ComparePoint>& done) {
  std::set<std::string> have;
  for (const auto& p : done) have.insert(p.key.id());
  std::vector<report::PointKey> out;
  for (const auto& k : grid.points)
    if (!have.count(k.id())) out.push_back(k);
  return out;
}

}  // namespace dtbench::bench
