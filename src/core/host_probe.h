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

// Path (resolved through symlinks and alternatives) of the loaded shared
// library whose name starts with `prefix` (e.g. "libblas"), or "" if none.
std::string loaded_library(const std::string& prefix);

}  // namespace dtbench
