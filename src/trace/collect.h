#pragma once
// Brings every rank's timeline to rank 0 on rank 0's clock: estimates each
// rank's clock offset by round trips over the communicator, then gathers
// the events (eight doubles each): their counts allgathered, the events
// gathered to rank 0 alone.
#include <vector>

#include "trace/chrome_trace.h"
#include "trace/event.h"

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::trace {

// Collective: every rank calls it. Rank r > 0 does `rounds` ping-pongs with
// rank 0 (one rank after another) and keeps the one with the shortest round
// trip; at_us is the midpoint of that round trip on this rank's clock.
// Rank 0's own estimate is {0, 0}. Called before and after a traced run,
// the two give the drift (chrome_trace.h's interpolate).
ClockEstimate estimate_clock(comm::Communicator& comm, int rounds = 16);

struct Gathered {
  std::vector<RankTimeline> ranks;     // rank 0 only: every rank, events on rank 0's clock
  std::vector<ClockEstimate> clocks;   // rank 0 only: per rank
};
// Collective: every rank's `events` (its own clock) with its `clock`
// estimate, to rank 0, each event moved by the offset at its own time
// (ClockEstimate::offset_at). `node` is this rank's node index.
Gathered gather_timelines(comm::Communicator& comm, const std::vector<Event>& events, int node,
                          const ClockEstimate& clock);

}  // namespace dtbench::trace
