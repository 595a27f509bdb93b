#pragma once
// Facts about this host that do not need LibTorch or a backend: host name,
// CPU model, cores/NUMA/caches (hwloc), the BLAS library actually loaded,
// GPUs (nvidia-smi, when present). Versions of LibTorch and the backends are
// added by the layers that own them (comm/factory).
#include <nlohmann/json.hpp>

namespace dtbench {

using Json = nlohmann::ordered_json;

// Returns {"hostname", "cpu_model", "sockets", "cores", "pus", "numa_nodes",
// "caches": {...}, "blas", "gpus": [...], "gpu_topology"}.
Json probe_host();

// Logical CPUs this process may use (>= 1).
int usable_cores();
// Intra-op threads that give each of `ranks_on_host` ranks an equal share of
// the cores without oversubscribing them: usable_cores() / ranks, >= 1.
int threads_per_rank(int ranks_on_host);

// Path (resolved through symlinks and alternatives) of the loaded shared
// library whose name starts with `prefix` (e.g. "libblas"), or "" if none.
std::string loaded_library(const std::string& prefix);

}  // namespace dtbench
