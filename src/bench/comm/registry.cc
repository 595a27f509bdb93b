#include "bench/comm/collective.h"

#include "core/error.h"

namespace dtbench::bench {

const CollectiveDef& collective_def(comm::Collective c) {
  switch (c) {
    case comm::Collective::kAllreduce:
      return allreduce_def();
    case comm::Collective::kBroadcast:
      return broadcast_def();
    case comm::Collective::kReduce:
      return reduce_def();
    case comm::Collective::kAllgather:
      return allgather_def();
    case comm::Collective::kReduceScatter:
      return reduce_scatter_def();
    case comm::Collective::kAlltoall:
      return alltoall_def();
    case comm::Collective::kSendrecv:
      return sendrecv_def();
    case comm::Collective::kGather:
      return gather_def();
    case comm::Collective::kScatter:
      return scatter_def();
    case comm::Collective::kPingpong:
      return pingpong_def();
    case comm::Collective::kBarrier:
      return barrier_def();
    case comm::Collective::kAlltoallv:
      return alltoallv_def();
    case comm::Collective::kAllgatherv:
      return allgatherv_def();
    case comm::Collective::kReduceScatterV:
      return reduce_scatter_v_def();
  }
  DTBENCH_CHECK(false, "unknown collective");
}

}  // namespace dtbench::bench
