#pragma once
// The ceiling dtbench's RPC is measured against: plain TensorPipe with no
// headers, handler thread or bookkeeping of ours. The echo server receives
// each message into a buffer kept per slot (reused) and writes the same
// bytes back; the client sends one round of messages (all in flight) and
// waits for every echo. A round of N arrays of sizes s_i moves the same bytes
// as a push + pull of those arrays.
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

// Sends `iters` rounds (after `warmup` untimed ones) of messages of `sizes`
// bytes to the echo server at `url`; returns the seconds each timed round
// took. Throws TimeoutError/CommError (a round bounded by the node's timeout).
std::vector<double> raw_echo_rounds(Node& node, const std::string& url,
                                    const std::vector<std::size_t>& sizes, int iters, int warmup);

}  // namespace dtbench::rpc
