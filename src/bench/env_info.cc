#include "bench/env_info.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <torch/cuda.h>

#include "build_config.h"
#include "comm/factory.h"
#include "core/allocator.h"
#include "core/blas_threads.h"
#include "compat/torch_version.h"
#include "core/host_probe.h"
#include "device/device.h"
#include "rpc/transport.h"

namespace dtbench::bench {

std::string build_flavour() {
  const std::string source = DTBENCH_TORCH_SOURCE;
  const std::string what = source == "debian" ? "Debian's LibTorch" : "LibTorch from the PyTorch wheel";
  return DTBENCH_HAVE_CUDA
             ? fmt::format("{} {} (CUDA {}, cuDNN {}, NCCL {})", what, compat::torch_version(),
                           DTBENCH_CUDA_VERSION, DTBENCH_CUDNN_VERSION, DTBENCH_NCCL_VERSION)
             : fmt::format("{} {} (CPU only)", what, compat::torch_version());
}

nlohmann::ordered_json cuda_json() {
  nlohmann::ordered_json j;
  j["built"] = DTBENCH_HAVE_CUDA == 1;
  if (DTBENCH_HAVE_CUDA) {
    j["toolkit"] = DTBENCH_CUDA_VERSION;
    j["cudnn"] = DTBENCH_CUDNN_VERSION;
    j["nccl"] = DTBENCH_NCCL_VERSION;
    // 0 without a GPU or driver: LibTorch asks the CUDA runtime, which
    // reports no device rather than failing.
    j["devices_visible"] = static_cast<int>(torch::cuda::device_count());
    // Name, memory, capability, PCI id per GPU, driver and runtime versions,
    // nvidia-smi topo -m; {count: 0, why} without a GPU.
    j["gpu"] = device::gpu_report();
  }
  return j;
}

int set_rank_threads(int local_world_size) {
  if (std::getenv("OMP_NUM_THREADS") == nullptr) at::set_num_threads(threads_per_rank(local_world_size));
  set_blas_threads(at::get_num_threads());
  return at::get_num_threads();
}

nlohmann::ordered_json probe_matmul(int64_t n) {
  auto a = at::randn({n, n}, at::kFloat);
  auto b = at::randn({n, n}, at::kFloat);
  auto c = at::empty({n, n}, at::kFloat);
  double best = 1e30;
  for (int i = 0; i < 7; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    at::mm_out(c, a, b);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i >= 2) best = std::min(best, s);
  }
  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  return {{"device", "cpu"},
          {"dtype", "float32"},
          {"n", n},
          {"threads", at::get_num_threads()},
          {"tflops", flops / best / 1e12}};
}

nlohmann::ordered_json probe_matmul_gpu(int64_t n) {
  const c10::Device dev = device::select("cuda", 0);
  nlohmann::ordered_json j{{"device", device::describe(dev)}, {"n", n}};
  // float32 as stored (TF32 tensor cores only where LibTorch allows them,
  // off by default), and the two 16-bit types tensor cores run natively.
  for (const auto& [name, dtype] : {std::pair<const char*, at::ScalarType>{"float32", at::kFloat},
                                    {"bfloat16", at::kBFloat16},
                                    {"float16", at::kHalf}}) {
    const auto o = at::TensorOptions().dtype(dtype).device(dev);
    auto a = at::randn({n, n}, o);
    auto b = at::randn({n, n}, o);
    auto c = at::empty({n, n}, o);
    double best = 1e30;
    for (int i = 0; i < 7; ++i) {
      device::synchronize(dev);
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < 5; ++k) at::mm_out(c, a, b);
      device::synchronize(dev);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 5;
      if (i >= 2) best = std::min(best, s);
    }
    j[std::string(name) + "_tflops"] = 2.0 * static_cast<double>(n) * n * n / best / 1e12;
  }
  return j;
}

nlohmann::ordered_json collect_env() {
  nlohmann::ordered_json j;
  j["dtbench"] = {{"version", DTBENCH_VERSION},
                  {"build_type", DTBENCH_BUILD_TYPE},
                  {"compiler", DTBENCH_COMPILER},
                  {"libtorch_source", DTBENCH_TORCH_SOURCE},
                  {"flavour", build_flavour()}};
  j["cuda"] = cuda_json();
  j["versions"] = comm::library_versions();
  nlohmann::ordered_json backends = nlohmann::ordered_json::array();
  for (const auto& b : comm::backends())
    if (b.built) backends.push_back(b.name);
  j["backends"] = backends;
  // TensorPipe transports and channels usable here (kvstore, hybrid).
  nlohmann::ordered_json transports = nlohmann::ordered_json::array();
  nlohmann::ordered_json channels = nlohmann::ordered_json::array();
  nlohmann::ordered_json unusable = nlohmann::ordered_json::array();
  for (const auto& c : rpc::components()) {
    if (!c.viable) unusable.push_back(c.name);
    else (c.kind == "transport" ? transports : channels).push_back(c.name);
  }
  j["tensorpipe"] = {{"transports", transports}, {"channels", channels}, {"not_usable_here", unusable}};
  j["malloc"] = alloc::to_json(alloc::current());
  j["threads"] = {{"intra_op", at::get_num_threads()}, {"inter_op", at::get_num_interop_threads()}};
  j["host"] = probe_host();
  return j;
}

nlohmann::ordered_json world_json(const launch::World& w) {
  nlohmann::ordered_json j{{"rank", w.rank},
                           {"world_size", w.world_size},
                           {"local_world_size", w.local_world_size},
                           {"num_nodes", w.num_nodes},
                           {"label", w.label()},
                           {"source", w.source},
                           {"master", w.master_addr + ":" + std::to_string(w.master_port)}};
  // Where the launcher took this node's place in the job from (Kubernetes).
  if (!w.node_plan.empty()) j["node_from"] = w.node_plan;
  return j;
}

nlohmann::ordered_json world_json(const launch::World& world, const launch::Topology& topo) {
  auto w = world;
  w.num_nodes = topo.nodes();
  auto j = world_json(w);
  j["node_of_rank"] = topo.node_of_rank;
  j["node_hosts"] = topo.node_hosts;
  return j;
}

}  // namespace dtbench::bench
