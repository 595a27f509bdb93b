#pragma once
// Horovod 0.28.1's Controller for `--reducer horovod` (read from
// horovod/common/controller.cc and response_cache.cc; written anew): each
// cycle, which of the tensors a rank has enqueued every rank has ready, and
// in which fused groups to reduce them. With the response cache (tensors
// seen before have a bit each) one AND across ranks of the ready bits
// answers; a request not in the cache goes to the coordinator (rank 0:
// requests gathered, a message table counts them, the fused response list is
// broadcast back). Differences from Horovod: the cache bits travel as int32
// 0/1 ANDed by a MIN allreduce (Horovod ANDs packed 64-bit words) and the
// coordinator's gather is an allgather. strategy_horovod.cc performs the
// responses; horovod_plan.h holds the pure decisions.
#include <cstdint>
#include <deque>
#include <set>
#include <vector>

#include "comm/communicator.h"
#include "train/horovod_plan.h"

namespace dtbench::train::horovod {

// Waits for one collective by polling it and yielding the CPU between polls
// (see strategy_horovod.cc): bounded by the communicator's --timeout;
// rethrows the collective's failure.
void finish_work(comm::Communicator& comm, comm::WorkPtr work);

class Controller {
 public:
  // `threshold`: the fusion threshold in bytes; `tensors`: the parameters
  // (tensor `tensors` is the buffer broadcast's request).
  Controller(comm::Communicator& comm, std::int64_t threshold, std::size_t tensors);

  // Each tensor's bytes on the wire and dtype code (tensors + 1 entries).
  void describe(std::vector<std::int64_t> bytes_of, std::vector<int> dtype_of);

  // Controller::ComputeResponseList for this rank's new `messages`: the
  // responses every rank performs next, in order. Cached requests that
  // another rank does not have ready yet go to `retry` (for the next
  // cycle). `shut_down`: in, this rank's wish; out, the agreed one.
  std::vector<Response> compute_responses(std::deque<Request> messages, std::deque<Request>& retry,
                                          bool& shut_down);

 private:
  std::vector<Response> coordinate(const std::deque<Request>& messages, const std::set<std::uint32_t>& common,
                                   bool& shut_down);

  comm::Communicator& comm_;
  const std::int64_t threshold_;
  const std::size_t tensors_;
  std::size_t broadcast_tensor_;
  std::vector<std::int64_t> bytes_of_;
  std::vector<int> dtype_of_;
  ResponseCache cache_;
  MessageTable table_;
};

}  // namespace dtbench::train::horovod
