#include "device/device.h"

#include <chrono>

#include <fmt/format.h>

#include "build_config.h"  // DTBENCH_HAVE_CUDA
#include "core/error.h"
#if DTBENCH_HAVE_CUDA
#include "device/cuda_runtime.h"
#endif

namespace dtbench::device {
namespace {

using Clock = std::chrono::steady_clock;

// Host clock only: what the CPU device and the host half of a GPU timer use.
class HostTimer : public PhaseTimer {
 public:
  void start() override {
    marks_.clear();
    marks_.push_back(Clock::now());
  }
  void mark() override { marks_.push_back(Clock::now()); }
  PhaseSample finish() override {
    PhaseSample s;
    for (size_t i = 1; i < marks_.size(); ++i)
      s.host.push_back(std::chrono::duration<double>(marks_[i] - marks_[i - 1]).count());
    return s;
  }

 private:
  std::vector<Clock::time_point> marks_;
};

void check_kind(const std::string& kind) {
  if (kind != "cpu" && kind != "cuda")
    throw UsageError(fmt::format("--device '{}' must be cpu or cuda", kind));
}

}  // namespace

bool cuda_built() { return DTBENCH_HAVE_CUDA == 1; }

int cuda_device_count() {
#if DTBENCH_HAVE_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

void check_available(const std::string& kind, int local_ranks) {
  check_kind(kind);
  if (kind == "cpu") return;
  if (!cuda_built())
    throw UsageError(
        "--device cuda: this dtbench was built without CUDA (Debian's LibTorch is CPU-only); "
        "build the wheel flavour: make TORCH=wheel");
  const int n = cuda_device_count();
  if (n == 0)
    throw UsageError("--device cuda: no CUDA GPU is visible on this machine (the CUDA runtime "
                     "reports 0 devices; check nvidia-smi and CUDA_VISIBLE_DEVICES)");
  if (local_ranks > n)
    throw UsageError(fmt::format(
        "--device cuda: {} ranks on this node but only {} GPU(s) visible; each rank needs its own "
        "GPU (LOCAL_RANK selects it): run at most {} ranks per node",
        local_ranks, n, n));
}

c10::Device select(const std::string& kind, int local_rank) {
  check_available(kind, local_rank + 1);
  if (kind == "cpu") return c10::Device(c10::DeviceType::CPU);
#if DTBENCH_HAVE_CUDA
  cuda::set_device(local_rank);
#endif
  return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(local_rank));
}

void synchronize(const c10::Device& device) {
#if DTBENCH_HAVE_CUDA
  if (device.is_cuda()) cuda::synchronize(device.index());
#else
  (void)device;
#endif
}

std::unique_ptr<Graph> capture_graph(const c10::Device& device, const std::function<void()>& body) {
#if DTBENCH_HAVE_CUDA
  if (device.is_cuda()) return cuda::capture_graph(device.index(), body);
#endif
  (void)body;
  throw UsageError(fmt::format("--cuda-graph: CUDA graphs capture GPU work, and these buffers are on the {} "
                               "(use --backend nccl --device cuda)",
                               device.is_cuda() ? "GPU of a build without CUDA" : "CPU"));
}

bool capturing(const c10::Device& device) {
#if DTBENCH_HAVE_CUDA
  if (device.is_cuda()) return cuda::capturing(device.index());
#endif
  (void)device;
  return false;
}

std::unique_ptr<StreamScope> use_own_stream(const c10::Device& device) {
#if DTBENCH_HAVE_CUDA
  if (device.is_cuda()) return cuda::own_stream(device.index());
#endif
  (void)device;
  return std::make_unique<StreamScope>();
}

std::string pci_bus_id(const c10::Device& device) {
#if DTBENCH_HAVE_CUDA
  if (device.is_cuda()) return cuda::pci_bus_id(device.index());
#endif
  (void)device;
  return "";
}

std::string describe(const c10::Device& device) {
#if DTBENCH_HAVE_CUDA
  if (device.is_cuda())
    return fmt::format("GPU {} {} (PCI {})", static_cast<int>(device.index()), cuda::name(device.index()),
                       cuda::pci_bus_id(device.index()));
#endif
  (void)device;
  return "CPU";
}

std::unique_ptr<PhaseTimer> make_phase_timer(const c10::Device& device) {
#if DTBENCH_HAVE_CUDA
  if (device.is_cuda()) return cuda::make_event_timer(device.index());
#endif
  (void)device;
  return std::make_unique<HostTimer>();
}

std::unique_ptr<PhaseTimer> make_host_timer() { return std::make_unique<HostTimer>(); }

nlohmann::ordered_json gpu_report() {
#if DTBENCH_HAVE_CUDA
  return cuda::report();
#else
  return {{"count", 0}, {"why", "built without CUDA"}};
#endif
}

}  // namespace dtbench::device
