#pragma once
// The CUDA side of device.h, compiled only in CUDA builds (cuda_runtime.cc).
// Only device.cc includes this header.
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "device/device.h"
#include "device/memory.h"

namespace dtbench::device::cuda {

int device_count();
void set_device(int index);
void synchronize(int index);
// A pool stream of GPU `index` current for this thread while it lives.
std::unique_ptr<StreamScope> own_stream(int index);
// device.h's capture_graph and capturing on GPU `index`.
std::unique_ptr<Graph> capture_graph(int index, const std::function<void()>& body);
bool capturing(int index);
std::string name(int index);
std::string pci_bus_id(int index);
std::unique_ptr<PhaseTimer> make_event_timer(int index);
nlohmann::ordered_json report();
// The CUDA caching allocator's statistics of GPU `index` (allocated and
// reserved bytes, peaks since the last reset).
MemoryStats memory_stats(int index);
void reset_peak_memory(int index);

}  // namespace dtbench::device::cuda
