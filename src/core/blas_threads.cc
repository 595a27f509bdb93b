#include "core/blas_threads.h"

#include <dlfcn.h>

namespace dtbench {
namespace {

using SetFn = void (*)(int);
using GetFn = int (*)();

SetFn set_fn() { return reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")); }
GetFn get_fn() { return reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads")); }

}  // namespace

int set_blas_threads(int threads) {
  const auto set = set_fn();
  if (set == nullptr || threads < 1) return blas_threads();
  set(threads);
  return blas_threads();
}

int blas_threads() {
  const auto get = get_fn();
  return get == nullptr ? 0 : get();
}

}  // namespace dtbench
