#pragma once
// c10::Allocator between LibTorch versions: allocate() is const in 1.13 and
// not in 2.x (2.3 on), where copy_data() became a pure virtual too. A CPU
// allocator derives from CpuAllocatorBase and implements do_allocate().
#include <c10/core/Allocator.h>

#include "compat/torch_version.h"

namespace dtbench::compat {

class CpuAllocatorBase : public c10::Allocator {
 public:
#if DTBENCH_TORCH_AT_LEAST(2, 3)
  c10::DataPtr allocate(size_t n) override { return do_allocate(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t n) const override { return do_allocate(n); }
#endif

 protected:
  virtual c10::DataPtr do_allocate(size_t n) const = 0;
};

}  // namespace dtbench::compat
