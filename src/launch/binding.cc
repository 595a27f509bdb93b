#include "launch/binding.h"

#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <hwloc.h>

#include "core/error.h"

namespace dtbench::launch {

Bind parse_bind(const std::string& text, const std::string& flag) {
  if (text == "none") return Bind::none;
  if (text == "core") return Bind::core;
  throw UsageError(fmt::format("{} '{}': expected none or core", flag, text));
}

CpuList current_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    throw IoError(fmt::format("cannot read this process's CPU affinity: {}", std::strerror(errno)));
  CpuList out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::vector<CpuList> allowed_cores() {
  const CpuList allowed = current_affinity();
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) throw IoError("cannot read the CPU topology (hwloc init failed)");
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    throw IoError("cannot read the CPU topology (hwloc load failed)");
  }
  std::vector<CpuList> cores;
  const int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  for (int i = 0; i < n; ++i) {
    const hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
    CpuList pus;
    for (int pu = hwloc_bitmap_first(core->cpuset); pu != -1; pu = hwloc_bitmap_next(core->cpuset, pu))
      if (std::binary_search(allowed.begin(), allowed.end(), pu)) pus.push_back(pu);
    if (!pus.empty()) cores.push_back(std::move(pus));
  }
  hwloc_topology_destroy(topo);
  // hwloc restricts its view to the allowed CPUs by default; a PU it did not
  // place in a core (none seen, but possible on odd VMs) counts as its own core.
  for (int pu : allowed) {
    const bool placed = std::any_of(cores.begin(), cores.end(), [&](const CpuList& c) {
      return std::find(c.begin(), c.end(), pu) != c.end();
    });
    if (!placed) cores.push_back({pu});
  }
  return cores;
}

std::vector<CpuList> plan_binding(Bind bind, const std::vector<CpuList>& cores, int nproc) {
  if (bind == Bind::none) return {};
  if (nproc < 1) throw UsageError(fmt::format("--bind: {} ranks to place", nproc));
  const int ncores = static_cast<int>(cores.size());
  if (ncores < nproc) {
    CpuList all;
    for (const auto& c : cores) all.insert(all.end(), c.begin(), c.end());
    throw UsageError(fmt::format(
        "--bind core: {} ranks but this process may use {} core(s) (CPUs {}); give fewer ranks or "
        "--bind none",
        nproc, ncores, describe_cpus(all)));
  }
  const int per = ncores / nproc;
  std::vector<CpuList> plan(static_cast<std::size_t>(nproc));
  for (int r = 0; r < nproc; ++r)
    for (int k = r * per; k < (r + 1) * per; ++k)
      plan[r].insert(plan[r].end(), cores[k].begin(), cores[k].end());
  return plan;
}

std::string describe_cpus(CpuList cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

namespace {

cpu_set_t to_set(const CpuList& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  return set;
}

void set_affinity(pid_t tid, const CpuList& cpus) {
  const cpu_set_t set = to_set(cpus);
  if (sched_setaffinity(tid, sizeof(set), &set) != 0)
    throw IoError(fmt::format("cannot bind to CPUs {}: {}", describe_cpus(cpus), std::strerror(errno)));
}

}  // namespace

void bind_this_thread(const CpuList& cpus) { set_affinity(0, cpus); }

void bind_this_process(const CpuList& cpus) {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) {
    set_affinity(0, cpus);
    return;
  }
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  while (const dirent* e = readdir(dir)) {
    const int tid = std::atoi(e->d_name);
    if (tid <= 0 || tid == self) continue;
    const cpu_set_t set = to_set(cpus);
    sched_setaffinity(tid, sizeof(set), &set);  // a thread that just ended is not an error
  }
  closedir(dir);
  set_affinity(0, cpus);
}

std::string encode_plan(const std::vector<CpuList>& plan) {
  std::string out;
  for (std::size_t i = 0; i < plan.size(); ++i) out += (i ? ";" : "") + describe_cpus(plan[i]);
  return out;
}

std::vector<CpuList> decode_plan(const std::string& text) {
  std::vector<CpuList> plan;
  auto bad = [&] { return UsageError(fmt::format("{}='{}': expected CPU lists like 0-3;4-7", kCpuPlanEnv, text)); };
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(';', start), text.size());
    const std::string rank = text.substr(start, end - start);
    CpuList cpus;
    std::size_t p = 0;
    while (p < rank.size()) {
      const std::size_t comma = std::min(rank.find(',', p), rank.size());
      const std::string item = rank.substr(p, comma - p);
      const std::size_t dash = item.find('-');
      try {
        std::size_t used = 0;
        const int lo = std::stoi(item.substr(0, dash), &used);
        if (used != (dash == std::string::npos ? item.size() : dash)) throw bad();
        int hi = lo;
        if (dash != std::string::npos) {
          hi = std::stoi(item.substr(dash + 1), &used);
          if (used != item.size() - dash - 1) throw bad();
        }
        if (lo < 0 || hi < lo || hi >= CPU_SETSIZE) throw bad();
        for (int c = lo; c <= hi; ++c) cpus.push_back(c);
      } catch (const std::logic_error&) {
        throw bad();
      }
      p = comma + 1;
    }
    if (cpus.empty()) throw bad();
    plan.push_back(std::move(cpus));
    start = end + 1;
  }
  return plan;
}

}  // namespace dtbench::launch
