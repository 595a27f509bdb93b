#include "project/memory_model.h"

#include <algorithm>
#include <cmath>

namespace dtbench::project {

MemoryFigures memory_per_rank(Strategy s, double psi, const FsdpUnitSizes& units, int world,
                              const MemoryOptions& o, double activation_bytes) {
  const double n = std::max(1, world);
  const double k = o.optimizer_states;
  MemoryFigures m;
  m.activations = activation_bytes;
  // AdamW's step (K = 2) makes sqrt(v) for the elements this rank steps: all
  // of them replicated, its shard when sharded (zero1, zero2, fsdp).
  const bool replicated = s == Strategy::kDdp || s == Strategy::kHorovod;
  m.step_temporaries = k == 2 ? 4 * (replicated ? psi : psi / n) : 0;
  switch (s) {
    case Strategy::kDdp:
      m.parameters = 4 * psi;
      m.gradients = 4 * psi;
      m.optimizer = 4 * k * psi;
      m.buffers = 4 * psi;  // c10d's Reducer: every gradient copied into its bucket
      m.kept_buffers = m.buffers;  // allocated once, kept after backward
      m.made_in_backward = m.gradients;  // set to none by zero_grad, made again by backward
      break;
    case Strategy::kHorovod:
      m.parameters = 4 * psi;
      m.gradients = 4 * psi;
      m.optimizer = 4 * k * psi;
      m.buffers = o.fusion_buffer_bytes;  // allocated whole at the threshold on first use, kept
      m.kept_buffers = m.buffers;
      m.made_in_backward = m.gradients;  // set to none by zero_grad, made again by backward
      break;
    case Strategy::kZero1:
      m.parameters = 4 * psi;
      m.gradients = 4 * psi;  // the full gradients are the buckets (views)
      m.optimizer = 4 * k * psi / n;
      m.buffers = 4 * psi / n;  // this rank's averaged shard
      m.kept_buffers = m.buffers;  // the gradient the step reads
      break;
    case Strategy::kZero2:
      m.parameters = 4 * psi;
      m.gradients = 4 * psi / n;
      m.optimizer = 4 * k * psi / n;
      // A bucket filling, one reducing.
      m.buffers = std::min(4 * psi, o.zero2_live_bucket_bytes > 0 ? o.zero2_live_bucket_bytes : 2 * o.bucket_cap_bytes);
      m.made_in_backward = m.gradients;  // the shards' gradients: dropped by zero_grad, made by the reductions
      break;
    case Strategy::kFsdp: {
      m.parameters = 4 * psi / n;
      m.gradients = 4 * psi / n;
      m.optimizer = 4 * k * psi / n;
      const double root = std::min(units.root, psi), block = std::min(units.block, psi);
      // The root stays gathered from its forward to the end of backward; of
      // the blocks, the one computing and the one prefetched (every unit,
      // once gathered, without resharding). Backward adds the unsharded
      // float32 gradients of the root (reduce-scattered at the end) and of
      // two blocks (one accumulating, one reduce-scattering).
      const double live = std::min(psi, root + 2 * block);
      const double params = o.reshard_after_forward ? live : psi;
      m.gathered = params * o.param_bytes + (o.accumulate_unsharded ? psi : live) * 4;
      m.made_in_backward = m.gradients;
      break;
    }
  }
  return m;
}

std::int64_t largest_batch(const MemoryFigures& at_batch, std::int64_t batch, double limit) {
  if (!(at_batch.activations > 0) || batch < 1) return -1;
  const double per_example = at_batch.activations / static_cast<double>(batch);
  const double room = limit - at_batch.beside_activations();
  if (room < per_example || at_batch.after_backward() > limit) return 0;
  return static_cast<std::int64_t>(std::floor(room / per_example));
}

}  // namespace dtbench::project
