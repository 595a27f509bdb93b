#pragma once
// The ceiling dtbench's RPC is measured against: plain TensorPipe with no
// headers, handler thread or bookkeeping of ours. The echo server receives
// each message into a buffer kept per pipe and slot (reused) and writes the
// same bytes back; the client sends one round of messages to every target
// (all in flight, one pipe per target) and waits for every echo. A round of
// N arrays of sizes s_i moves the same bytes as a push + pull of those
// arrays. Several clients may echo against one server at once (the run's
// concurrency: every worker against every server).
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "rpc/node.h"

namespace dtbench::rpc {

class RawEchoServer {
 public:
  explicit RawEchoServer(Node& node);
  ~RawEchoServer();
  Endpoint endpoint() const;
  void stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// One echo server and the sizes of the messages a round sends to it.
struct EchoTarget {
  std::string url;
  std::vector<std::size_t> sizes;
};

// Sends `iters` rounds (after `warmup` untimed ones); in each, every target
// gets its messages at once (or, one_at_a_time, each target's after the
// previous target's echoes are back), and the round ends when every echo is
// back.
// Returns the seconds each timed round took. Throws TimeoutError/CommError (a
// round bounded by the node's timeout), VerificationError (altered echo).
std::vector<double> raw_echo_rounds(Node& node, const std::vector<EchoTarget>& targets, int iters,
                                    int warmup, bool one_at_a_time = false);

}  // namespace dtbench::rpc
