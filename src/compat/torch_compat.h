#pragma once
// The one place where differences between LibTorch versions live: Debian's
// 1.13 (CPU builds) and the 2.x of the PyTorch wheels (GPU builds). Every
// other file calls these helpers instead of testing TORCH_VERSION itself.
#include <torch/csrc/api/include/torch/version.h>

#define DTBENCH_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||          \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#include <chrono>
#include <memory>
#include <string>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

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

inline std::shared_ptr<::gloo::transport::Device> gloo_default_device() {
#if DTBENCH_TORCH_AT_LEAST(2, 3)
  return c10d::ProcessGroupGloo::createDefaultDevice(/*lazyInit=*/false);
#else
  return c10d::ProcessGroupGloo::createDefaultDevice();
#endif
}

inline c10d::TCPStoreOptions tcp_store_options() {
  c10d::TCPStoreOptions opts;
#if DTBENCH_TORCH_AT_LEAST(2, 2)
  opts.useLibUV = false;  // the classic server: same behaviour as 1.13
#endif
  return opts;
}

}  // namespace dtbench::compat
