// CUDA builds only (see src/CMakeLists.txt): the CUDA runtime behind device.h.
#include "device/cuda_runtime.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <memory>
#include <vector>

#include <ATen/cuda/CUDAGraph.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::device::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(fmt::format("CUDA: {} failed: {}", what, cudaGetErrorString(e)));
}

std::string version_text(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

// Host clock plus one CUDA event per mark on the current stream.
class EventTimer : public PhaseTimer {
 public:
  explicit EventTimer(int index) : index_(index), host_(make_host_timer()) {}
  ~EventTimer() override {
    for (auto e : events_) cudaEventDestroy(e);
  }

  void start() override {
    used_ = 0;
    host_->start();
    record();
  }
  void mark() override {
    host_->mark();
    record();
  }
  PhaseSample finish() override {
    PhaseSample s = host_->finish();
    check(cudaEventSynchronize(events_[used_ - 1]), "cudaEventSynchronize");
    for (size_t i = 1; i < used_; ++i) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, events_[i - 1], events_[i]), "cudaEventElapsedTime");
      s.device.push_back(ms / 1e3);
    }
    return s;
  }

 private:
  void record() {
    if (used_ == events_.size()) {
      cudaEvent_t e;
      check(cudaEventCreate(&e), "cudaEventCreate");
      events_.push_back(e);
    }
    const auto stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(index_));
    check(cudaEventRecord(events_[used_++], stream.stream()), "cudaEventRecord");
  }

  int index_;
  std::unique_ptr<PhaseTimer> host_;
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};

std::string nvidia_smi_topology() {
  // nvidia-smi is optional: without it the report says so.
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen("nvidia-smi topo -m 2>&1", "r"), pclose);
  if (!p) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p.get())) > 0) out.append(buf, n);
  return out;
}

}  // namespace

int device_count() {
  int n = 0;
  // No driver or no GPU: the runtime returns an error; that is 0 GPUs here.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

void set_device(int index) { check(cudaSetDevice(index), "cudaSetDevice"); }

namespace {

class PoolStream : public StreamScope {
 public:
  explicit PoolStream(int index)
      : guard_(c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(index))) {}

 private:
  c10::cuda::CUDAStreamGuard guard_;
};

}  // namespace

std::unique_ptr<StreamScope> own_stream(int index) { return std::make_unique<PoolStream>(index); }

namespace {

// The GPU whose work this thread is capturing (-1: none): what capturing()
// answers, without a CUDA call on every wait (and so without a sticky CUDA
// error surfacing there instead of in the call that caused it).
thread_local int capturing_index = -1;

// at::cuda::CUDAGraph (what torch.cuda.graph wraps), captured on a pool
// stream: capture needs a stream other than the default one.
class CapturedGraph : public Graph {
 public:
  CapturedGraph(int index, const std::function<void()>& body) {
    check(cudaSetDevice(index), "cudaSetDevice");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // the buffers are written
    c10::cuda::CUDAStreamGuard guard(c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(index)));
    graph_.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    struct Marked {
      explicit Marked(int i) { capturing_index = i; }
      ~Marked() { capturing_index = -1; }
    } marked(index);
    try {
      body();
    } catch (...) {
      try {
        graph_.capture_end();  // ends the (now invalid) capture; its own error is the lesser one
      } catch (...) {
      }
      throw;
    }
    graph_.capture_end();
  }
  void replay() override { graph_.replay(); }

 private:
  at::cuda::CUDAGraph graph_;
};

}  // namespace

std::unique_ptr<Graph> capture_graph(int index, const std::function<void()>& body) {
  return std::make_unique<CapturedGraph>(index, body);
}

bool capturing(int index) { return capturing_index == index; }

void synchronize(int index) {
  const auto stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(index));
  check(cudaStreamSynchronize(stream.stream()), "cudaStreamSynchronize");
}

std::string name(int index) {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties");
  return p.name;
}

std::string pci_bus_id(int index) {
  char id[32] = {0};
  check(cudaDeviceGetPCIBusId(id, sizeof id, index), "cudaDeviceGetPCIBusId");
  return id;
}

std::unique_ptr<PhaseTimer> make_event_timer(int index) { return std::make_unique<EventTimer>(index); }

nlohmann::ordered_json report() {
  nlohmann::ordered_json j;
  const int n = device_count();
  j["count"] = n;
  if (n == 0) {
    j["why"] = "no CUDA device visible (no GPU, no driver, or CUDA_VISIBLE_DEVICES hides them)";
    return j;
  }
  nlohmann::ordered_json devs = nlohmann::ordered_json::array();
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, i), "cudaGetDeviceProperties");
    devs.push_back({{"index", i},
                    {"name", p.name},
                    {"memory_bytes", static_cast<std::uint64_t>(p.totalGlobalMem)},
                    {"capability", fmt::format("{}.{}", p.major, p.minor)},
                    {"multiprocessors", p.multiProcessorCount},
                    {"pci_bus_id", pci_bus_id(i)}});
  }
  j["devices"] = devs;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  j["driver_cuda"] = version_text(driver);
  j["runtime"] = version_text(runtime);
  try {
    const long v = at::detail::getCUDAHooks().versionRuntimeCuDNN();
    j["cudnn_runtime"] = fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
  } catch (const std::exception&) {
    j["cudnn_runtime"] = "unavailable";
  }
  const std::string topo = nvidia_smi_topology();
  j["topology"] = topo.empty() ? "nvidia-smi not available" : topo;
  return j;
}

MemoryStats memory_stats(int index) {
  const auto st = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  constexpr auto kAll = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  MemoryStats m;
  m.current = st.allocated_bytes[kAll].current;
  m.peak = st.allocated_bytes[kAll].peak;
  m.reserved_peak = st.reserved_bytes[kAll].peak;
  return m;
}

void reset_peak_memory(int index) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
}

}  // namespace dtbench::device::cuda
