#pragma once
// c10d differences between LibTorch 1.13 (Debian) and 2.x (the wheels):
// Gloo device creation, TCPStore options, and the ProcessGroup that engines
// such as the Reducer take.
#include <memory>
#include <string>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "compat/c10d_backend.h"
#include "compat/torch_version.h"

namespace dtbench::compat {

inline std::shared_ptr<::gloo::transport::Device> gloo_device_for_hostname(const std::string& host) {
#if DTBENCH_TORCH_AT_LEAST(2, 3)
  return c10d::ProcessGroupGloo::createDeviceForHostname(host, /*lazyInit=*/false);
#else
  return c10d::ProcessGroupGloo::createDeviceForHostname(host);
#endif
}

inline std::shared_ptr<::gloo::transport::Device> gloo_device_for_interface(const std::string& iface) {
#if DTBENCH_TORCH_AT_LEAST(2, 3)
  return c10d::ProcessGroupGloo::createDeviceForInterface(iface, /*lazyInit=*/false);
#else
  return c10d::ProcessGroupGloo::createDeviceForInterface(iface);
#endif
}

inline c10d::TCPStoreOptions tcp_store_options() {
  c10d::TCPStoreOptions opts;
#if DTBENCH_TORCH_AT_LEAST(2, 2)
  opts.useLibUV = false;  // the classic server: same behaviour as 1.13
#endif
  return opts;
}

// Whether this LibTorch's TCPStore client may join the store torchrun's agent
// hosts (TORCHELASTIC_USE_AGENT_STORE). 1.13's client against a 2.x agent
// (the only torchrun that runs on Debian 12) gets no answer to its first
// request and waits forever; a 1.13 build hosts its own store instead.
inline constexpr bool can_join_torchrun_store() { return DTBENCH_TORCH_AT_LEAST(2, 0); }

// What ProcessGroupGloo of this LibTorch can do beyond the common set; each
// "false" was checked against the library (its error quoted in `why_*`).
struct GlooLimits {
  bool bfloat16, avg, avg_integers, reduce_scatter;
  const char* why_bfloat16;
  const char* why_avg;
  const char* why_avg_integers;
  const char* why_reduce_scatter;
  // Non-empty where reduce_scatter runs but is made of other collectives at
  // no saving over an allreduce (the strategies then allreduce and take
  // their shard: Communicator::composite_reason).
  const char* reduce_scatter_composite;
};
inline GlooLimits gloo_limits() {
#if DTBENCH_TORCH_AT_LEAST(2, 0)
  // 2.11: avg is a sum divided in place by the world size, which fails for
  // integer tensors.
  return {true, true, false, true, "", "",
          "gloo: ProcessGroupGloo in LibTorch " TORCH_VERSION " has no avg of integer types: it averages "
          "by an in-place division, which fails for int32/int64 (\"result type Float can't be cast to the "
          "desired output type Int\") and gives int8/uint8 results other than floor(sum / n)",
          "",
          // Measured (2 ranks, loopback, 32 MB in): reduce_scatter 59 ms,
          // allreduce 35 ms; launching it copies the input; Work::isCompleted
          // stays false until wait() (docs/PERFORMANCE.md "Gloo's reduce_scatter").
          "gloo: ProcessGroupGloo in LibTorch " TORCH_VERSION " reduce-scatters by allreducing copies of "
          "the input's chunks: an allreduce's traffic and more memory, so the sharded strategies "
          "allreduce and keep their shard"};
#else
  return {false, false, false, false,
          "gloo: ProcessGroupGloo in LibTorch 1.13 has no bfloat16 (\"Invalid scalar type\")",
          "gloo: ProcessGroupGloo in LibTorch 1.13 has no avg reduction (use sum)",
          "gloo: ProcessGroupGloo in LibTorch 1.13 has no avg reduction (use sum)",
          "gloo: ProcessGroupGloo in LibTorch 1.13 does not implement reduce_scatter", ""};
#endif
}

// "" where ProcessGroupGloo takes bool tensors (2.x: sum and max are or,
// prod and min and), else why not (checked against 1.13: "Invalid scalar
// type" from every collective).
inline const char* gloo_bool_reason() {
#if DTBENCH_TORCH_AT_LEAST(2, 0)
  return "";
#else
  return "gloo: ProcessGroupGloo in LibTorch 1.13 has no bool (\"Invalid scalar type\")";
#endif
}

// Whether this LibTorch's ProcessGroupGloo has the flat-tensor allgather and
// reduce_scatter (_allgather_base, _reduce_scatter_base) for host tensors:
// 1.13's refuses both ("no support for _allgather_base in Gloo process group").
inline constexpr bool gloo_has_flat_collectives() { return DTBENCH_TORCH_AT_LEAST(2, 0); }

// A c10d::ProcessGroup for engines that take one (the Reducer). In 1.13
// ProcessGroupGloo is a ProcessGroup; since 2.0 it is a Backend that a
// ProcessGroup dispatches to.
inline c10::intrusive_ptr<c10d::ProcessGroup> gloo_process_group(
    const c10::intrusive_ptr<c10d::ProcessGroupGloo>& gloo,
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
#if DTBENCH_TORCH_AT_LEAST(2, 0)
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  pg->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, gloo);
  // Gloo also reduces CUDA tensors (through host copies): --backend gloo
  // with --device cuda.
  pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::GLOO, gloo);
  return pg;
#else
  (void)store;
  (void)rank;
  (void)size;
  return gloo;
#endif
}

}  // namespace dtbench::compat
