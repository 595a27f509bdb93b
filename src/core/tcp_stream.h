#pragma once
// A raw TCP stream between two hosts, the ceiling of what a collective can
// move over the link between them (`dtbench comm`'s link ceiling between
// nodes): one side listens, the other connects and sends for a while, the
// receiver times the bytes from the first to the last. Torch-free, plain
// sockets (IPv4).
#include <chrono>
#include <cstdint>
#include <string>

namespace dtbench::net {

// A listening socket on `ip` (IPv4, dotted) and a port the kernel chose.
class StreamListener {
 public:
  explicit StreamListener(const std::string& ip);
  ~StreamListener();
  StreamListener(const StreamListener&) = delete;
  StreamListener& operator=(const StreamListener&) = delete;
  int port() const { return port_; }
  // Accepts one connection and reads it to its end; returns the rate in
  // bytes per second over the stream's last four fifths (past TCP's slow
  // start and a shaper's burst; 0 when fewer than 2 reads arrived). Throws IoError past `timeout` without a connection or
  // data.
  double receive(std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Connects to ip:port (retrying until `timeout`: the listener may not be
// listening yet), sends for `seconds`, closes. Returns the bytes sent.
// Throws IoError when it cannot connect within `timeout`, the send fails, or
// a send makes no progress for `timeout` (the receiver stopped reading).
std::int64_t send_stream(const std::string& ip, int port, double seconds, std::chrono::milliseconds timeout);

}  // namespace dtbench::net
