#pragma once
// The environment header every benchmark prints on rank 0 and stores in its
// JSON report: dtbench build, LibTorch and backend versions, threads, host
// facts (core/host_probe) and, when given, the job's world.
#include <string>

#include <nlohmann/json.hpp>

#include "launch/topology.h"
#include "launch/world.h"

namespace dtbench::bench {

nlohmann::ordered_json collect_env();
// Intra-op threads of a comm/kvstore/hybrid rank: cores / local ranks (>= 1),
// unless OMP_NUM_THREADS is set. LibTorch's default (all cores in every
// process) lets idle OpenMP workers of several ranks compete with the
// backends' threads: 2.11's gloo allreduce of 1 MiB took 7 ms instead of
// 2 ms on 2 ranks x 2 cores. Call before collect_env(); returns the count.
int set_rank_threads(int local_world_size);
// "Debian's LibTorch 1.13.0 (CPU only)", "LibTorch from the PyTorch wheel
// 2.11.0 (CUDA 13.0, cuDNN 9.19.0, NCCL 2.28.9)": what this binary was built with.
std::string build_flavour();
// {"built": bool, "toolkit", "cudnn", "nccl" (compiled in), "devices_visible"}.
nlohmann::ordered_json cuda_json();
// `dtbench env --probe`: the float32 matrix-multiply rate of this process's
// CPU with its intra-op threads (best of 5 n x n products after 2 warm-ups),
// the peak to give --peak-tflops on a CPU. {device, dtype, n, threads, tflops}.
nlohmann::ordered_json probe_matmul(int64_t n = 1024);
// The same on GPU 0 (--device cuda) in float32, bfloat16 and float16, n x n
// (default 8192); UsageError without a GPU.
nlohmann::ordered_json probe_matmul_gpu(int64_t n = 8192);
nlohmann::ordered_json world_json(const launch::World& world);
// With the measured topology: num_nodes and the label count the nodes seen,
// plus "node_of_rank" and "node_hosts".
nlohmann::ordered_json world_json(const launch::World& world, const launch::Topology& topo);

}  // namespace dtbench::bench
