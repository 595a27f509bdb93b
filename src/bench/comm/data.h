#pragma once
// Test data whose collective results are exact in every dtype: small integers
// chosen per reduction op so that sums, products, minima and maxima over all
// ranks stay exactly representable (bfloat16 holds integers up to 256).
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "comm/types.h"

namespace dtbench::bench {

struct DataSpec {
  comm::DType dtype = comm::DType::kFloat32;
  comm::ReduceOp op = comm::ReduceOp::kSum;
  bool reduction = true;  // false: data that identifies its rank (broadcast, gathers)
  int nranks = 1;
  c10::Device device{c10::DeviceType::CPU};  // data is made (and reduced) here
};

// Elements [offset, offset + count) of rank `rank`'s data.
at::Tensor rank_data(const DataSpec& spec, int rank, std::int64_t offset, std::int64_t count);

// The op over all ranks of rank_data(spec, r, offset, count), in spec.dtype.
at::Tensor reduced_data(const DataSpec& spec, std::int64_t offset, std::int64_t count);

// Number of elements of `got` that differ from `expected` (NaN counts as wrong).
std::int64_t count_wrong(const at::Tensor& got, const at::Tensor& expected);

}  // namespace dtbench::bench
