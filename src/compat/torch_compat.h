#pragma once
// The one place where differences between LibTorch versions live: Debian's
// 1.13 (CPU builds) and the 2.x of the PyTorch wheels (GPU builds). Every
// other file calls these helpers instead of testing TORCH_VERSION itself.
#include <torch/csrc/api/include/torch/version.h>

#define DTBENCH_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||          \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/autocast_mode.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#include <torch/optim/optimizer.h>

namespace dtbench::compat {

// The work handle type c10d collectives return (c10d::Work since 1.13).
using C10dWork = c10d::Work;

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

// A c10d::ProcessGroup for engines that take one (the Reducer). In 1.13
// ProcessGroupGloo is a ProcessGroup; since 2.0 it is a Backend that a
// ProcessGroup dispatches to. (The 2.x branch is unverified: no 2.x build
// was available to this project yet.)
inline c10::intrusive_ptr<c10d::ProcessGroup> gloo_process_group(
    const c10::intrusive_ptr<c10d::ProcessGroupGloo>& gloo,
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
#if DTBENCH_TORCH_AT_LEAST(2, 0)
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  pg->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, gloo);
  return pg;
#else
  (void)store;
  (void)rank;
  (void)size;
  return gloo;
#endif
}

// PyTorch DDP's bucket assignment: buckets of at most `first_bucket_bytes`
// (the first) and `bucket_bytes` (the rest), then reversed, because
// gradients become ready roughly in reverse order of the parameters.
struct BucketAssignment {
  std::vector<std::vector<size_t>> indices;
  std::vector<size_t> limits;
};
inline BucketAssignment ddp_bucket_assignment(const std::vector<at::Tensor>& params,
                                              size_t first_bucket_bytes, size_t bucket_bytes) {
  auto result = c10d::compute_bucket_assignment_by_size(
      params, {first_bucket_bytes, bucket_bytes}, std::vector<bool>(params.size(), false));
  BucketAssignment a{std::get<0>(result), std::get<1>(result)};
  std::reverse(a.indices.begin(), a.indices.end());
  std::reverse(a.limits.begin(), a.limits.end());
  return a;
}

// c10d::Reducer as PyTorch DDP constructs it (dense gradients, every
// parameter used, gradients copied into the buckets).
inline std::unique_ptr<c10d::Reducer> make_reducer(const std::vector<at::Tensor>& params,
                                                   const BucketAssignment& buckets,
                                                   c10::intrusive_ptr<c10d::ProcessGroup> group,
                                                   int64_t bucket_bytes,
                                                   int64_t first_bucket_bytes) {
  std::vector<bool> sparse(params.size(), false);
#if DTBENCH_TORCH_AT_LEAST(2, 0)
  return std::make_unique<c10d::Reducer>(params, buckets.indices, std::move(group), sparse,
                                         bucket_bytes, /*find_unused_parameters=*/false,
                                         /*gradient_as_bucket_view=*/false,
                                         std::unordered_map<size_t, std::string>{},
                                         first_bucket_bytes,
                                         /*skip_all_reduce_unused_params=*/false,
                                         /*use_python_reducer=*/false);
#else
  return std::make_unique<c10d::Reducer>(params, buckets.indices, buckets.limits,
                                         std::move(group), sparse, bucket_bytes,
                                         /*find_unused_parameters=*/false,
                                         /*gradient_as_bucket_view=*/false,
                                         std::unordered_map<size_t, std::string>{},
                                         first_bucket_bytes);
#endif
}

// Zeroes gradients in place (1.13's behaviour; 2.x defaults to set_to_none).
inline void zero_grad(torch::optim::Optimizer& opt) {
#if DTBENCH_TORCH_AT_LEAST(2, 0)
  opt.zero_grad(/*set_to_none=*/false);
#else
  opt.zero_grad();
#endif
}

// CPU autocast on or off, with its lower-precision dtype. 2.4 replaced the
// per-device setters with ones taking the device type (2.x branch unverified).
inline void set_cpu_autocast(bool enabled, at::ScalarType dtype) {
#if DTBENCH_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(at::kCPU, dtype);
  at::autocast::set_autocast_enabled(at::kCPU, enabled);
#else
  at::autocast::set_autocast_cpu_dtype(dtype);
  at::autocast::set_cpu_enabled(enabled);
#endif
  if (!enabled) at::autocast::clear_cache();
}

}  // namespace dtbench::compat
