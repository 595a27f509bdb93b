#include "bench/comm/comm_options.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::bench {

void validate_comm_options(const CommBenchOptions& opts, int world_size) {
  if (opts.root < 0 || opts.root >= world_size)
    throw UsageError(fmt::format("--root {} is not a rank of this {}-rank job", opts.root, world_size));
  if (opts.iters < 1) throw UsageError("--iters must be at least 1");
  if (opts.warmup < 0) throw UsageError("--warmup must not be negative");
  size_sweep(opts.sweep);
}

}  // namespace dtbench::bench
