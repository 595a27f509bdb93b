#pragma once
// ATen's float8 scalar types (e4m3fn, e5m2), which LibTorch has from 2.1:
// the comm benchmark's float8 rows exist only where they do.
#include <optional>

#include <c10/core/ScalarType.h>

#include "compat/torch_version.h"

namespace dtbench::compat {

// The float8 type (e4m3fn when `e4m3`, else e5m2); nullopt where this
// LibTorch has none.
inline std::optional<at::ScalarType> float8_type(bool e4m3) {
#if DTBENCH_TORCH_AT_LEAST(2, 1)
  return e4m3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
#else
  (void)e4m3;
  return std::nullopt;
#endif
}

}  // namespace dtbench::compat
