#pragma once
// The grid of `dtbench compare`: models × world sizes × bucket sizes ×
// compressions × amp settings × activation checkpointing × reducers, each
// point a full ddp run.
// Torch-free.
#include <string>
#include <vector>

#include "report/compare_record.h"

namespace dtbench::bench {

struct GridSpec {
  std::vector<std::string> models{"resnet50"};
  std::vector<int> world_sizes{1, 2};
  std::vector<std::string> reducers{"ddp", "overlap", "sync"};
  std::vector<double> bucket_caps_mb{1, 5, 10, 25, 50};
  std::vector<std::string> compressions{"none"};
  std::vector<std::string> amps{"none"};  // --amp: none, bf16, fp16
  std::vector<std::string> acs{"none"};   // --activation-checkpointing: none, full, selective
};

struct Grid {
  // In run order: model, bucket size, compression, amp, activation
  // checkpointing, reducer, world size
  // (innermost), so one strategy's scaling is complete before the next starts.
  std::vector<report::PointKey> points;
  // Combinations left out, one line each ("ddp+fp16: ...").
  std::vector<std::string> skipped;
};

// Throws UsageError for an empty or repeated list entry, an unknown reducer,
// compression or amp, the reducer `none` (the single-process baseline is not a
// strategy), and a grid in which no point can run.
Grid expand_grid(const GridSpec& spec);

// The points of `grid` not in `done` (matched by PointKey::id()).
std::vector<report::PointKey> remaining_points(const Grid& grid,
                                               const std::vector<report::ComparePoint>& done);

}  // namespace dtbench::bench
