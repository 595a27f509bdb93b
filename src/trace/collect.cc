#include "trace/collect.h"

#include <algorithm>

#include <torch/types.h>

#include "comm/communicator.h"
#include "trace/timeline.h"

namespace dtbench::trace {
namespace {

constexpr int kClockTag = 7101;

}  // namespace

ClockEstimate estimate_clock(comm::Communicator& comm, int rounds) {
  ClockEstimate best;
  if (comm.size() < 2) return best;
  auto buf = torch::zeros({1}, torch::kDouble);
  const auto timeout = comm.timeout();
  if (comm.rank() == 0) {
    for (int r = 1; r < comm.size(); ++r)
      for (int k = 0; k < rounds; ++k) {
        comm.recv(buf, r, kClockTag)->wait(timeout);
        buf.fill_(Timeline::now_us());
        comm.send(buf, r, kClockTag)->wait(timeout);
      }
    return best;
  }
  double best_rtt = -1;
  for (int k = 0; k < rounds; ++k) {
    const double t0 = Timeline::now_us();
    comm.send(buf, 0, kClockTag)->wait(timeout);
    comm.recv(buf, 0, kClockTag)->wait(timeout);
    const double t1 = Timeline::now_us();
    const double remote = buf.item<double>();
    if (best_rtt < 0 || t1 - t0 < best_rtt) {
      best_rtt = t1 - t0;
      best.offset_us = remote - (t0 + t1) / 2;
      best.bound_us = best_rtt / 2;
      best.at_us = (t0 + t1) / 2;
    }
  }
  return best;
}

Gathered gather_timelines(comm::Communicator& comm, const std::vector<Event>& events, int node,
                          const ClockEstimate& clock) {
  const int n = comm.size();
  // Header: node, the clock estimate (5), event count; then the events.
  std::vector<double> mine{static_cast<double>(node), clock.offset_us, clock.bound_us, clock.at_us,
                           clock.drift_ppm, clock.span_us, static_cast<double>(events.size())};
  for (const auto& e : events) pack(e, mine);
  const auto timeout = comm.timeout();
  auto len = torch::tensor({static_cast<double>(mine.size())}, torch::kDouble);
  auto lens = torch::zeros({n}, torch::kDouble);
  comm.allgather(len, lens)->wait(timeout);
  const auto width = static_cast<int64_t>(lens.max().item<double>());
  auto padded = torch::zeros({width}, torch::kDouble);
  std::copy(mine.begin(), mine.end(), padded.data_ptr<double>());
  // To rank 0 alone (the others would each hold every rank's events: about
  // 0.8 GB at 256 ranks x 1,000 iterations).
  auto all = torch::zeros({comm.rank() == 0 ? n * width : 0}, torch::kDouble);
  comm.gather(padded, all, 0)->wait(timeout);
  Gathered out;
  if (comm.rank() != 0) return out;
  for (int r = 0; r < n; ++r) {
    const double* p = all.data_ptr<double>() + r * width;
    RankTimeline t;
    t.rank = r;
    t.node = static_cast<int>(p[0]);
    const ClockEstimate c{p[1], p[2], p[3], p[4], p[5]};
    const auto count = static_cast<int64_t>(p[6]);
    p += 7;
    for (int64_t i = 0; i < count; ++i, p += kPackedWidth) {
      Event e = unpack(p);
      e.begin_us += c.offset_at(e.begin_us);
      e.end_us += c.offset_at(e.end_us);
      t.events.push_back(e);
    }
    out.ranks.push_back(std::move(t));
    out.clocks.push_back(c);
  }
  return out;
}

}  // namespace dtbench::trace
