#include "trace/event.h"

namespace dtbench::trace {

void pack(const Event& e, std::vector<double>& out) {
  out.insert(out.end(), {static_cast<double>(e.kind), static_cast<double>(e.sub),
                         static_cast<double>(e.iteration), static_cast<double>(e.bucket), e.begin_us,
                         e.end_us, static_cast<double>(e.bytes), static_cast<double>(e.dtype)});
}

Event unpack(const double* p) {
  Event e;
  e.kind = static_cast<EventKind>(static_cast<int>(p[0]));
  e.sub = static_cast<int>(p[1]);
  e.iteration = static_cast<int>(p[2]);
  e.bucket = static_cast<int>(p[3]);
  e.begin_us = p[4];
  e.end_us = p[5];
  e.bytes = static_cast<std::int64_t>(p[6]);
  e.dtype = static_cast<int>(p[7]);
  return e;
}

}  // namespace dtbench::trace
