#pragma once
// c10d::Reducer across LibTorch versions: its constructor changed in 2.0
// (no per-bucket limits) and again in 2.x (use_python_reducer, a per-bucket
// cap list), and DDP's bucket assignment helper.
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/csrc/distributed/c10d/reducer.hpp>

#include "compat/torch_version.h"

namespace dtbench::compat {

// PyTorch DDP's bucket assignment: buckets of at most `first_bucket_bytes`
// (the first) and `bucket_bytes` (the rest), then reversed, because
// gradients become ready roughly in reverse order of the parameters.
struct BucketAssignment {
  std::vector<std::vector<size_t>> indices;
  std::vector<size_t> limits;
};
inline BucketAssignment ddp_bucket_assignment(const std::vector<at::Tensor>& params,
                                              size_t first_bucket_bytes, size_t bucket_bytes) {
  auto result = c10d::compute_bucket_assignment_by_size(
      params, {first_bucket_bytes, bucket_bytes}, std::vector<bool>(params.size(), false));
  BucketAssignment a{std::get<0>(result), std::get<1>(result)};
  std::reverse(a.indices.begin(), a.indices.end());
  std::reverse(a.limits.begin(), a.limits.end());
  return a;
}

// c10d::Reducer as PyTorch DDP constructs it (dense gradients, every
// parameter used, gradients copied into the buckets).
inline std::unique_ptr<c10d::Reducer> make_reducer(const std::vector<at::Tensor>& params,
                                                   const BucketAssignment& buckets,
                                                   c10::intrusive_ptr<c10d::ProcessGroup> group,
                                                   int64_t bucket_bytes,
                                                   int64_t first_bucket_bytes) {
  std::vector<bool> sparse(params.size(), false);
#if DTBENCH_TORCH_AT_LEAST(2, 0)
  return std::make_unique<c10d::Reducer>(params, buckets.indices, std::move(group), sparse,
                                         bucket_bytes, /*find_unused_parameters=*/false,
                                         /*gradient_as_bucket_view=*/false,
                                         std::unordered_map<size_t, std::string>{},
                                         first_bucket_bytes,
                                         /*skip_all_reduce_unused_params=*/false,
                                         /*use_python_reducer=*/false,
                                         /*bucket_bytes_cap_list=*/std::vector<int64_t>{});
#else
  return std::make_unique<c10d::Reducer>(params, buckets.indices, buckets.limits,
                                         std::move(group), sparse, bucket_bytes,
                                         /*find_unused_parameters=*/false,
                                         /*gradient_as_bucket_view=*/false,
                                         std::unordered_map<size_t, std::string>{},
                                         first_bucket_bytes);
#endif
}

}  // namespace dtbench::compat
