#pragma once
// The heap allocator's settings, made once at start-up (main) and reported in
// `dtbench env` and every JSON report.
//
// Why: glibc's malloc serves blocks above its mmap threshold with fresh
// mmap()s and returns freed memory above its trim threshold to the kernel;
// both thresholds move with what the process allocated before (dynamic
// threshold). A training iteration frees and re-allocates the same large
// activation and gradient blocks, so depending on the history of the process
// each iteration may fault every page of them in again (tens of thousands
// of minor faults). Two runs of the same computation (the "no ddp" row and a
// 1-rank ddp row) then differ by up to 2x. Fixed thresholds make every row's
// allocator behave the same and keep freed memory for reuse, as PyTorch's
// CUDA caching allocator does on a GPU. Measurements: docs/PERFORMANCE.md.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace dtbench::alloc {

struct AllocatorSettings {
  std::string mode;            // "tuned" (dtbench's settings), "default" (glibc's dynamic ones), "env" (GLIBC_TUNABLES given)
  std::int64_t mmap_threshold = 0;  // bytes; 0 = glibc's dynamic default
  std::int64_t trim_threshold = 0;  // bytes; 0 = glibc's dynamic default
  std::string tunables;        // GLIBC_TUNABLES as found, "" if unset
  std::string preload;         // LD_PRELOAD as found (another allocator may be in it)
};

// dtbench's fixed thresholds: blocks up to 32 MiB (the most glibc allows on
// 64-bit) from the heap, and freed memory kept unless more than 1 GiB sits
// free at the top of the heap.
inline constexpr std::int64_t kMmapThreshold = std::int64_t{32} << 20;
inline constexpr std::int64_t kTrimThreshold = std::int64_t{1} << 30;

// Applies the settings chosen by DTBENCH_MALLOC (tuned, the default, or
// default) unless GLIBC_TUNABLES already sets malloc thresholds (then the
// user's tunables stand: mode "env"). Call first thing in main(); worker
// processes inherit DTBENCH_MALLOC and make the same choice. Throws
// UsageError for another DTBENCH_MALLOC value.
AllocatorSettings configure_from_env();

// What configure_from_env() chose in this process (mode "" before it ran).
const AllocatorSettings& current();

// The GLIBC_TUNABLES value that gives another process (a Python peer) the
// same thresholds as `s`; "" for mode "default".
std::string equivalent_tunables(const AllocatorSettings& s);

nlohmann::ordered_json to_json(const AllocatorSettings& s);

// Minor page faults of this process so far (getrusage).
std::int64_t minor_faults();

// The process's resident-set high-water mark (Linux VmHWM) in bytes; -1
// where it cannot be read. reset_peak_rss() restarts it from the current
// RSS (writes 5 to /proc/self/clear_refs; false where the kernel refuses).
std::int64_t peak_rss_bytes();
bool reset_peak_rss();

}  // namespace dtbench::alloc
