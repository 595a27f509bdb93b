#pragma once
// The CUDA side of device.h, compiled only in CUDA builds (cuda_runtime.cc).
// Only device.cc includes this header.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "device/device.h"

namespace dtbench::device::cuda {

int device_count();
void set_device(int index);
void synchronize(int index);
std::string name(int index);
std::string pci_bus_id(int index);
std::unique_ptr<PhaseTimer> make_event_timer(int index);
nlohmann::ordered_json report();

}  // namespace dtbench::device::cuda
