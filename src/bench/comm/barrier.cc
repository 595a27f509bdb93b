// barrier: every rank waits until all have arrived (PARAM's barrier). No
// data moves, so there is nothing to compare element by element; the driver
// checks the order instead: no rank may leave an iteration before the last
// one arrived (iteration_stats.h barrier_violations). busbw 0.
#include "bench/comm/collective_util.h"

namespace dtbench::bench {

const CollectiveDef& barrier_def() {
  static const CollectiveDef def{
      comm::Collective::kBarrier,
      /*splits=*/false,
      InPlace::kNone,
      [](int) { return 0.0; },
      [](const CollArgs&) -> std::int64_t { return 0; },
      [](const CollArgs&) -> std::int64_t { return 0; },
      [](const CollArgs& a) {
        return at::empty({0}, at::TensorOptions().dtype(comm::to_scalar_type(a.dtype)).device(a.device));
      },
      [](const CollArgs&) { return at::Tensor(); },
      [](const CollArgs& a, const at::Tensor&, at::Tensor&) -> comm::WorkPtr {
        a.comm->barrier();
        return std::make_unique<comm::CompletedWork>();
      },
  };
  return def;
}

}  // namespace dtbench::bench
