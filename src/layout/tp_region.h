#pragma once
// A tensor-parallel group's mappings (models/tensor_parallel.h's TpRegion)
// over a communicator: Megatron-Core's copy_to / reduce_from
// tensor_model_parallel_region as autograd functions whose sums are the
// communicator's allreduce, waited within its timeout. Size 1: both are the
// identity.
#include <cstdint>

#include "models/tensor_parallel.h"

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::layout {

// What a region's sums cost this rank, forward and backward together: how
// many, their bytes, and their seconds by the host clock from the
// allreduce's start to the end of its wait (the tensor-parallel
// communication a block exposes: nothing overlaps it). Its owner resets it
// between warm-up and the timed iterations.
struct TpCommMeter {
  std::int64_t calls = 0;
  std::int64_t bytes = 0;
  double seconds = 0;
  void reset() { *this = TpCommMeter{}; }
};

// The region of `tp`, which must outlive it and every model split with it;
// with `meter` (which must outlive them too) every sum is counted there.
models::TpRegion make_tp_region(comm::Communicator& tp, TpCommMeter* meter = nullptr);

}  // namespace dtbench::layout
