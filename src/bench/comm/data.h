#pragma once
// Test data whose collective results are exact in every dtype: small integers
// chosen per reduction op so that sums, products, minima and maxima over all
// ranks stay exactly representable (bfloat16 holds integers up to 256).
//
// Every value is a hash of (seed, element index) and, where the data must
// say which rank it came from, of the rank: no period in the index, so a
// chunk sent to the wrong place, or the wrong rank's chunk, differs from what
// is expected (a repeating pattern would let chunks whose size is a multiple
// of the period pass). The seed changes per run and per size
// (comm_bench.cc), so a stale buffer from an earlier size does not pass
// either. Reductions over all ranks have closed forms per element, so the
// expected result costs one pass over the buffer, not one per rank.
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
  std::uint64_t seed = 0;
};

// Elements [offset, offset + count) of rank `rank`'s data.
at::Tensor rank_data(const DataSpec& spec, int rank, std::int64_t offset, std::int64_t count);

// The op over all ranks of rank_data(spec, r, offset, count), in spec.dtype.
at::Tensor reduced_data(const DataSpec& spec, std::int64_t offset, std::int64_t count);

// The relative difference allowed between a result and reduced_data: 0
// (exact: sums and products are kept within every dtype's exact integers
// whatever the rank count) except for avg of floating types, where the
// backend's division rounds (NCCL scales by 1/n before summing): n * eps.
double tolerance(const DataSpec& spec);

// Number of elements of `got` that differ from `expected` by more than
// `rel_tol` * max(1, |expected|) (NaN counts as wrong).
std::int64_t count_wrong(const at::Tensor& got, const at::Tensor& expected, double rel_tol = 0);

}  // namespace dtbench::bench
