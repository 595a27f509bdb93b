// pingpong: rank 0 sends its buffer to rank 1, which sends what it received
// back (PARAM's point-to-point latency test, OSU's osu_latency). One
// iteration is the round trip; busbw = 2 x size / round trip, the one-way
// bandwidth of a message crossing the link (factor 2). Rank 0 must get its
// own data back and rank 1 must hold rank 0's, so a message lost, stale or
// taken from the wrong rank is counted wrong. Needs a 2-rank communicator
// (--split pairs ranks).
#include "bench/comm/collective_util.h"

namespace dtbench::bench {
namespace {

constexpr int kPingTag = 7101;
constexpr int kPongTag = 7102;

double factor_two(int) { return 2.0; }

}  // namespace

const CollectiveDef& pingpong_def() {
  static const CollectiveDef def{
      comm::Collective::kPingpong,
      /*splits=*/false,
      InPlace::kNone,
      factor_two,
      whole,
      whole,
      [](const CollArgs& a) { return rank_data(data_spec(a, false), a.rank, 0, a.count); },
      [](const CollArgs& a) { return rank_data(data_spec(a, false), 0, 0, a.count); },
      [](const CollArgs& a, const at::Tensor& in, at::Tensor& out) {
        if (a.rank == 0) {
          a.comm->send(in, 1, kPingTag)->wait(a.comm->timeout());
          return a.comm->recv(out, 1, kPongTag);
        }
        a.comm->recv(out, 0, kPingTag)->wait(a.comm->timeout());
        return a.comm->send(out, 0, kPongTag);
      },
      // Rank 1's time runs from one send's end to the next's: a round trip
      // only in steady state.
      /*first_rank_times=*/true,
  };
  return def;
}

}  // namespace dtbench::bench
