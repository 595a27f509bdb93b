#include "models/pipeline_split.h"

#include <torch/nn/modules/linear.h>

#include "core/error.h"

namespace dtbench::models {

torch::nn::ModuleList stage_blocks_only(const torch::nn::ModuleList& blocks, const StageSpan& span) {
  const auto n = static_cast<int64_t>(blocks->size());
  DTBENCH_CHECK(0 <= span.first_block && span.first_block < span.end_block && span.end_block <= n,
                "a stage outside the model's blocks");
  torch::nn::ModuleList kept;
  for (int64_t i = 0; i < n; ++i) {
    if (i >= span.first_block && i < span.end_block)
      kept->push_back(blocks->ptr(static_cast<std::size_t>(i)));
    else
      kept->push_back(torch::nn::Identity());
  }
  return kept;
}

}  // namespace dtbench::models
