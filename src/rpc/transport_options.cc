// The checks of TransportOptions that need no TensorPipe (rpc/transport.h).
#include <fmt/format.h>

#include "core/error.h"
#include "rpc/transport.h"

namespace dtbench::rpc {

void validate_names(const TransportOptions& o) {
  if (o.transport != "auto" && o.transport != "shm" && o.transport != "uv")
    throw UsageError(fmt::format("--transport '{}' must be auto, shm or uv", o.transport));
  if (o.channel != "auto" && o.channel != "cma" && o.channel != "basic")
    throw UsageError(fmt::format("--channel '{}' must be auto, cma or basic", o.channel));
  if (o.timeout.count() <= 0) throw UsageError("rpc: the request timeout must be positive");
}

}  // namespace dtbench::rpc
