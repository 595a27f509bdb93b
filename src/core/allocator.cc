#include "core/allocator.h"

#include <malloc.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::alloc {
namespace {

AllocatorSettings g_current;

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

AllocatorSettings configure_from_env() {
  AllocatorSettings s;
  s.tunables = env_or_empty("GLIBC_TUNABLES");
  s.preload = env_or_empty("LD_PRELOAD");
  const std::string want = env_or_empty("DTBENCH_MALLOC");
  if (!want.empty() && want != "tuned" && want != "default")
    throw UsageError(fmt::format("DTBENCH_MALLOC='{}' is not 'tuned' or 'default'", want));
  if (s.tunables.find("glibc.malloc.") != std::string::npos) {
    s.mode = "env";  // the user's own thresholds stand
  } else if (want == "default") {
    s.mode = "default";
  } else {
    s.mode = "tuned";
    s.mmap_threshold = kMmapThreshold;
    s.trim_threshold = kTrimThreshold;
    // mallopt() with either option also turns glibc's dynamic thresholds off.
    if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(s.mmap_threshold)) != 1 ||
        mallopt(M_TRIM_THRESHOLD, static_cast<int>(s.trim_threshold)) != 1)
      throw std::runtime_error("mallopt() refused dtbench's malloc thresholds");
  }
  g_current = s;
  return s;
}

const AllocatorSettings& current() { return g_current; }

std::string equivalent_tunables(const AllocatorSettings& s) {
  if (s.mode == "env") return s.tunables;
  if (s.mode != "tuned") return "";
  return fmt::format("glibc.malloc.mmap_threshold={}:glibc.malloc.trim_threshold={}",
                     s.mmap_threshold, s.trim_threshold);
}

nlohmann::ordered_json to_json(const AllocatorSettings& s) {
  nlohmann::ordered_json j{{"mode", s.mode},
                           {"mmap_threshold", s.mmap_threshold},
                           {"trim_threshold", s.trim_threshold}};
  // What a peer process (a Python benchmark) needs to run with the same thresholds.
  j["peer_glibc_tunables"] = equivalent_tunables(s);
  if (!s.tunables.empty()) j["glibc_tunables"] = s.tunables;
  if (!s.preload.empty()) j["ld_preload"] = s.preload;
  return j;
}

std::int64_t peak_rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  std::int64_t kib = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    long long v = 0;
    if (std::sscanf(line, "VmHWM: %lld kB", &v) == 1) {
      kib = v;
      break;
    }
  }
  std::fclose(f);
  return kib < 0 ? -1 : kib * 1024;
}

bool reset_peak_rss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

std::int64_t minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

}  // namespace dtbench::alloc
