#include "trace/observer.h"

#include <chrono>

namespace dtbench::trace {
namespace {

class NullObserver : public TrainObserver {};

}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kCommWait:
      return "comm wait";
    case Phase::kOptimizer:
      return "optimizer";
    case Phase::kBroadcast:
      return "buffer broadcast";
    case Phase::kDelay:
      return "injected delay";
  }
  return "?";
}

const char* wire_dtype_name(WireDType d) {
  switch (d) {
    case WireDType::kFloat32:
      return "float32";
    case WireDType::kFloat16:
      return "float16";
    case WireDType::kBFloat16:
      return "bfloat16";
  }
  return "?";
}

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kNegotiate:
      return "negotiate";
    case Stage::kMemcpyIn:
      return "memcpy in fusion buffer";
    case Stage::kMemcpyOut:
      return "memcpy out fusion buffer";
  }
  return "?";
}

double clock_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TrainObserver& null_observer() {
  static NullObserver null;
  return null;
}

}  // namespace dtbench::trace
