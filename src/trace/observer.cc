#include "trace/observer.h"

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

TrainObserver& null_observer() {
  static NullObserver null;
  return null;
}

}  // namespace dtbench::trace
