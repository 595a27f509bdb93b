#pragma once
// Literal events for the --trace tests (trace_analysis_test.cc,
// trace_file_test.cc): spans by phase or kind, and one rank's iteration.
#include "trace/event.h"
#include "trace/observer.h"

namespace dtbench::trace::testing {

inline Event phase(Phase p, double b, double e, int it = 0) {
  Event x;
  x.kind = EventKind::kPhase;
  x.sub = static_cast<int>(p);
  x.iteration = it;
  x.begin_us = b;
  x.end_us = e;
  return x;
}
inline Event of(EventKind k, double b, double e, int bucket = -1, int it = 0) {
  Event x;
  x.kind = k;
  x.iteration = it;
  x.bucket = bucket;
  x.begin_us = b;
  x.end_us = e;
  x.bytes = 1000;
  return x;
}

// Iteration 0..100: forward 0-20, backward 20-60 (last gradient at 50),
// comm wait 60-80, optimizer 80-90; two collectives 30-55 and 50-75.
inline RankTimeline one_rank() {
  RankTimeline t;
  t.events = {of(EventKind::kIteration, 0, 100),       phase(Phase::kForward, 0, 20),
              phase(Phase::kBackward, 20, 60),          of(EventKind::kBackwardCompute, 20, 50),
              phase(Phase::kCommWait, 60, 80),          phase(Phase::kOptimizer, 80, 90),
              of(EventKind::kBucketReady, 28, 28, 0),   of(EventKind::kCollective, 30, 55, 0),
              of(EventKind::kBucketReady, 50, 50, 1),   of(EventKind::kCollective, 50, 75, 1)};
  return t;
}

}  // namespace dtbench::trace::testing
