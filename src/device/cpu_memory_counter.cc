#include "device/cpu_memory_counter.h"

#include <atomic>
#include <cstddef>
#include <mutex>

#include <c10/core/CPUAllocator.h>

#include "compat/allocator_compat.h"

namespace dtbench::device::cpu_counter {
namespace {

std::atomic<std::int64_t> g_current{0};
std::atomic<std::int64_t> g_peak{0};
std::atomic<bool> g_installed{false};

void raise_peak(std::int64_t now) {
  auto p = g_peak.load(std::memory_order_relaxed);
  while (now > p && !g_peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
  }
}

// Each allocation carries its size in a header of kHeader bytes in front of
// the tensor's data, so a DataPtr stays "simple" (data == context, what
// raw_allocate() and some ATen kernels require) and the free needs no table.
// kHeader is the CPU allocator's alignment: the data stays 64-byte aligned.
constexpr std::size_t kHeader = 64;
c10::DeleterFnPtr g_inner_delete = nullptr;

void free_counted(void* data) {
  if (data == nullptr) return;
  auto* base = static_cast<char*>(data) - kHeader;
  g_current.fetch_sub(*reinterpret_cast<std::int64_t*>(base), std::memory_order_relaxed);
  g_inner_delete(base);
}

class CountingCpuAllocator final : public compat::CpuAllocatorBase {
 public:
  explicit CountingCpuAllocator(c10::Allocator* inner) : inner_(inner) {
    g_inner_delete = inner->raw_deleter();
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_counted; }

 protected:
  c10::DataPtr do_allocate(size_t n) const override {
    auto inner = inner_->allocate(n + kHeader);
    const auto device = inner.device();
    auto* base = static_cast<char*>(inner.release_context());
    *reinterpret_cast<std::int64_t*>(base) = static_cast<std::int64_t>(n);
    const auto bytes = static_cast<std::int64_t>(n);
    raise_peak(g_current.fetch_add(bytes, std::memory_order_relaxed) + bytes);
    void* data = base + kHeader;
    return {data, data, &free_counted, device};
  }

 private:
  c10::Allocator* inner_;
};

}  // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Wraps the default allocator (not whatever is current), and registers
    // above it: SetCPUAllocator keeps the highest priority given.
    // The wrapper needs the default allocator's plain deleter (its
    // allocations are simple DataPtrs); anything else is left alone.
    c10::Allocator* inner = c10::GetDefaultCPUAllocator();
    if (inner->raw_deleter() == nullptr) return;
    static CountingCpuAllocator counting(inner);
    c10::SetCPUAllocator(&counting, /*priority=*/100);
    g_installed = true;
  });
}

bool installed() { return g_installed.load(); }
std::int64_t current() { return g_current.load(); }
std::int64_t peak() { return g_peak.load(); }
void reset_peak() { g_peak.store(g_current.load()); }

}  // namespace dtbench::device::cpu_counter
