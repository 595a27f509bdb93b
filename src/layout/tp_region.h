#pragma once
// A tensor-parallel group's mappings (models/tensor_parallel.h's TpRegion)
// over a communicator: Megatron-Core's copy_to / reduce_from
// tensor_model_parallel_region as autograd functions whose sums are the
// communicator's allreduce, waited within its timeout. Size 1: both are the
// identity.
#include "models/tensor_parallel.h"

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::layout {

// The region of `tp`, which must outlive it and every model split with it.
models::TpRegion make_tp_region(comm::Communicator& tp);

}  // namespace dtbench::layout
