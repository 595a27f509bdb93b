#include "core/host_probe.h"
#include "core/blas_threads.h"

#include <algorithm>
#include <thread>

#include <link.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include <hwloc.h>

namespace dtbench {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

// Runs a command and returns its stdout ("" when it fails or is absent).
std::string capture(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return "";
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  return out;
}

bool have_command(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

Json hwloc_facts() {
  Json j;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
    j["hwloc_error"] = "could not load the topology";
    return j;
  }
  auto count = [&](hwloc_obj_type_t t) { return hwloc_get_nbobjs_by_type(topo, t); };
  j["sockets"] = count(HWLOC_OBJ_PACKAGE);
  j["cores"] = count(HWLOC_OBJ_CORE);
  j["pus"] = count(HWLOC_OBJ_PU);
  j["numa_nodes"] = count(HWLOC_OBJ_NUMANODE);
  Json caches = Json::object();
  const std::pair<hwloc_obj_type_t, const char*> kCaches[] = {
      {HWLOC_OBJ_L1CACHE, "L1d"}, {HWLOC_OBJ_L2CACHE, "L2"}, {HWLOC_OBJ_L3CACHE, "L3"}};
  for (const auto& [type, name] : kCaches) {
    const int n = count(type);
    if (n <= 0) continue;
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, type, 0);
    caches[name] = {{"count", n}, {"bytes", obj->attr->cache.size}};
  }
  j["caches"] = caches;
  hwloc_topology_destroy(topo);
  return j;
}

int find_library(struct dl_phdr_info* info, size_t, void* data) {
  auto* query = static_cast<std::pair<std::string, std::string>*>(data);
  const std::string path = info->dlpi_name ? info->dlpi_name : "";
  const auto slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.rfind(query->first, 0) == 0) {
    query->second = path;
    return 1;
  }
  return 0;
}

}  // namespace

std::string loaded_library(const std::string& prefix) {
  std::pair<std::string, std::string> query{prefix, ""};
  dl_iterate_phdr(find_library, &query);
  if (query.second.empty()) return "";
  char resolved[PATH_MAX];
  if (realpath(query.second.c_str(), resolved) != nullptr) return resolved;
  return query.second;
}

Json probe_host() {
  Json j;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  j["hostname"] = host;
  j["cpu_model"] = cpu_model();
  j["online_cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  const Json topo = hwloc_facts();
  for (const auto& [k, v] : topo.items()) j[k] = v;
  const std::string blas = loaded_library("libblas");
  j["blas"] = blas.empty() ? "none loaded" : blas;
  // OpenBLAS's own pool (core/blas_threads.h), set to the intra-op threads; 0: none.
  j["blas_threads"] = blas_threads();
  Json gpus = Json::array();
  if (have_command("nvidia-smi")) {
    const std::string out = capture(
        "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null");
    std::size_t start = 0;
    while (start < out.size()) {
      auto end = out.find('\n', start);
      if (end == std::string::npos) end = out.size();
      if (end > start) gpus.push_back(out.substr(start, end - start));
      start = end + 1;
    }
    j["gpu_topology"] = capture("nvidia-smi topo -m 2>/dev/null");
  }
  j["gpus"] = gpus;
  return j;
}

int usable_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

int threads_per_rank(int ranks_on_host) { return std::max(1, usable_cores() / std::max(1, ranks_on_host)); }

}  // namespace dtbench
