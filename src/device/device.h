#pragma once
// Where a rank computes (--device cpu|cuda) and how its phases are timed: the
// one place that picks CPU or CUDA. Everything CUDA-specific is behind this
// header, in cuda_runtime.cc, which only CUDA builds compile; callers never
// test DTBENCH_HAVE_CUDA themselves.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

namespace dtbench::device {

// The --device names in the order `--help` lists them.
inline const char* const kDeviceNames[] = {"cpu", "cuda"};

// True when this binary was built with CUDA (the wheel flavour).
bool cuda_built();
// GPUs the CUDA runtime reports; 0 without CUDA, driver or GPU.
int cuda_device_count();

// Throws UsageError, naming what is missing, when `kind` cannot serve
// `local_ranks` ranks on this node: an unknown name, a build without CUDA, no
// GPU visible, or fewer GPUs than local ranks. Creates nothing, so the CLI
// calls it before it launches anything.
void check_available(const std::string& kind, int local_ranks);

// The device of the rank with LOCAL_RANK `local_rank` (cuda:<local_rank>, or
// the CPU), made current for this process. Throws like check_available.
c10::Device select(const std::string& kind, int local_rank);

// While the returned object lives, the calling thread's work on `device`
// goes to a stream of its own (from the CUDA stream pool), not the one the
// other threads share: a thread that computes beside communication (`comm
// --with-compute`). Nothing on the CPU.
class StreamScope {
 public:
  virtual ~StreamScope() = default;
};
std::unique_ptr<StreamScope> use_own_stream(const c10::Device& device);
// Blocks the host until the device has finished the work queued on its
// current stream; nothing on the CPU.
void synchronize(const c10::Device& device);

// A CUDA graph (`comm -G`): the work one capture queued, launched again by
// each replay() on the calling thread's current stream (not waited for).
class Graph {
 public:
  virtual ~Graph() = default;
  virtual void replay() = 0;
};
// Captures what `body` queues on `device` into a graph: the device finishes
// its earlier work, then `body` runs with a pool stream current and that
// stream captured (thread-local mode: other threads' CUDA calls, such as a
// backend's watchdog, go on unhindered). Work `body` hands to other streams
// must be joined back to it before it returns. Throws UsageError on the CPU
// (no graphs there) and what the capture raised when it fails.
std::unique_ptr<Graph> capture_graph(const c10::Device& device, const std::function<void()>& body);
// True while the calling thread runs capture_graph's body on `device`: its
// stream is being captured, and host waits (synchronize, event queries) are
// not allowed. A thread-local flag, no CUDA call. Always false on the CPU.
bool capturing(const c10::Device& device);

// "NVIDIA H100 80GB HBM3 (PCI 0000:1b:00.0)": names a GPU in error lines; the
// PCI bus id alone is unique per machine.
std::string describe(const c10::Device& device);
std::string pci_bus_id(const c10::Device& device);

// Seconds per phase of one iteration, by the host clock and, on a GPU, by
// CUDA events on the compute stream (empty on the CPU).
struct PhaseSample {
  std::vector<double> host, device;
};

// Times the phases of one iteration: start(), then mark() at the end of
// each phase, then finish(). On a GPU each mark also records an event on the
// current stream; finish() waits for the last one, so device times are
// exact while host times show when the host got past each phase.
class PhaseTimer {
 public:
  virtual ~PhaseTimer() = default;
  virtual void start() = 0;
  virtual void mark() = 0;
  virtual PhaseSample finish() = 0;
};
std::unique_ptr<PhaseTimer> make_phase_timer(const c10::Device& device);
// The host-clock timer alone (what the CPU device uses).
std::unique_ptr<PhaseTimer> make_host_timer();

// For `dtbench env`: {count, devices: [{index, name, memory_bytes, capability,
// multiprocessors, pci_bus_id}], driver, runtime, cudnn_runtime, topology
// (nvidia-smi topo -m, when nvidia-smi is on PATH)}; {count: 0, why} without
// a GPU.
nlohmann::ordered_json gpu_report();

}  // namespace dtbench::device
