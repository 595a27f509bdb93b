#pragma once
// One recorded span or instant of a rank's timeline (--trace), in
// microseconds of that rank's steady clock until collect.h moves it onto
// rank 0's. Torch-free; eight doubles each on the wire (pack/unpack).
#include <cstdint>
#include <vector>

namespace dtbench::trace {

enum class EventKind : int {
  kPhase = 0,        // `sub` = Phase: a span of the training thread
  kCollective = 1,   // a bucket's collective, launch to completion
  kCast = 2,         // a compression cast of a bucket (training thread)
  kBucketReady = 3,  // instant: the bucket's last gradient was produced
  kIteration = 4,    // the whole iteration on this rank
  kBackwardCompute = 5,  // backward start to its last gradient (the compute part of backward)
  kStage = 6,            // `sub` = Stage of a fused group (horovod): negotiation, memcpy in/out
  kAllGather = 7,        // a sharded strategy's parameter all-gather, launch to completion
                         // (`bucket` = the FSDP unit or ZeRO bucket)
  kInCall = 8,           // the thread running the model inside the call that launched a collective
                         // or all-gather (`sub` = 7 for an all-gather, 1 for a collective) or
                         // waiting for one (`sub` = 0): not computing
};

struct Event {
  EventKind kind = EventKind::kPhase;
  int sub = -1;        // Phase for kPhase, Stage for kStage
  int iteration = 0;   // from 0, warm-up included
  int bucket = -1;     // collectives, all-gathers, casts, ready marks
  double begin_us = 0, end_us = 0;  // equal for instants
  std::int64_t bytes = 0;           // collectives and all-gathers (the gathered buffer)
  int dtype = 0;                    // WireDType of collectives
  double duration_us() const { return end_us - begin_us; }
};

constexpr int kPackedWidth = 8;
// Appends `e` as kPackedWidth doubles / reads one back from `p`.
void pack(const Event& e, std::vector<double>& out);
Event unpack(const double* p);

// All events of one rank, on rank 0's clock once collected.
struct RankTimeline {
  int rank = 0;
  int node = 0;
  std::vector<Event> events;
};

}  // namespace dtbench::trace
