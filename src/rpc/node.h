#pragma once
// dtbench's request/response layer on TensorPipe (docs/ARCHITECTURE.md, rpc/).
//
//   Node    one per process: the TensorPipe context (transports, channels)
//   Server  listens; each request's parts are received into buffers the
//           service chooses (reused, never freshly allocated per message) on
//           the event loop, then handled on the server's own handler thread,
//           which may reply at once or later (a deferred pull); the event
//           loop never runs service code that blocks (a service may ask for
//           short requests to be handled right there: handle_inline)
//   Client  one pipe to one server; requests carry ids, so any number may be
//           in flight; each reply lands in buffers given with the request;
//           every request has a deadline (TransportOptions::timeout)
//
// Messages up to 64 KiB travel inline as payloads (no channel hand-shake);
// larger ones as tensors over the channel (cma on one host, basic otherwise).
// Buffers passed to send must stay valid until the request (or reply)
// completes. A closed or broken pipe fails every request on it with a
// CommError naming the peer.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rpc/transport.h"
#include "rpc/wire.h"

namespace tensorpipe {
class Context;
class Listener;
class Pipe;
}  // namespace tensorpipe

namespace dtbench::rpc {

// A region a message part is sent from or received into.
struct Buffer {
  void* data = nullptr;
  std::size_t bytes = 0;
};

// Parts up to this many bytes in total travel inline.
inline constexpr std::size_t kInlineLimit = 64 * 1024;

class Node {
 public:
  // `name` labels this process in errors ("worker 1", "server 0").
  Node(const TransportOptions& opts, std::string name);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const TransportOptions& options() const { return opts_; }
  const std::string& name() const { return name_; }
  tensorpipe::Context& context() { return *ctx_; }
  // Closes every listener and pipe and joins the event loop. Idempotent.
  void close();

 private:
  TransportOptions opts_;
  std::string name_;
  std::shared_ptr<tensorpipe::Context> ctx_;
  bool closed_ = false;
};

// A fully received request, handed to the service on the handler thread.
struct Request {
  std::uint32_t peer = 0;  // connection id (reply to it)
  Header header;
  std::vector<Buffer> parts;  // the buffers receive_into() chose, now filled
};

// What a service implements. receive_into runs on the event loop and must
// not block; handle and disconnected run on the server's handler thread.
class Service {
 public:
  virtual ~Service() = default;
  // Buffers of exactly `lengths` bytes for an incoming request's parts.
  // Throwing rejects the request: the peer gets an error reply.
  virtual std::vector<Buffer> receive_into(const Header& h,
                                           const std::vector<std::size_t>& lengths) = 0;
  virtual void handle(Request req) = 0;
  // True: handle() runs for this request on the event loop as soon as its
  // parts arrived, skipping the hop to the handler thread and back (for
  // short work that never waits: a lookup of a few rows). The service must
  // then guard what such requests share with the handler thread.
  virtual bool handle_inline(const Header& h) const { return false; }
  // A peer's pipe closed (`why` says how). Called once per connection.
  virtual void disconnected(std::uint32_t peer, const std::string& why) {}
};

class Server {
 public:
  explicit Server(Node& node);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Where clients reach this server (publish it in the store).
  Endpoint endpoint() const;

  // Starts accepting connections and serving requests with `service`.
  void start(Service* service);

  // Any thread: replies to `peer`. `parts` must stay valid until `sent` runs
  // (on the event loop; may be empty).
  void reply(std::uint32_t peer, Header h, std::vector<Buffer> parts,
             std::function<void()> sent = {});
  // Replies with status kStatusError and `why`.
  void reply_error(std::uint32_t peer, const Header& request, const std::string& why);

  // Runs `task` on the handler thread (after what is already queued).
  void post(std::function<void()> task);

  // Handler thread: ends wait() with success ("" ) or a failure.
  void finish(const std::string& error = "");

  // Blocks until finish() is called, the service throws, or no request
  // arrives for `idle_timeout`. Returns "" on success, else one line.
  std::string wait(std::chrono::milliseconds idle_timeout);

  // Stops accepting, closes pipes, stops the handler thread. Idempotent.
  void stop();

 private:
  struct Impl;  // shared with TensorPipe's callbacks, which may outlive this
  std::shared_ptr<Impl> impl_;
};

// One request in flight.
class Call {
 public:
  // Blocks until the reply arrived and the request was fully sent. Returns
  // the reply header. Throws TimeoutError past the deadline, CommError when
  // the pipe broke or the server replied with an error.
  Header wait();
  bool done();

  // Internal state, written by the client's event-loop callbacks.
  std::mutex mu;
  std::condition_variable cv;
  int pending = 2;  // reply read + request written
  std::string error;
  Header reply;
  std::vector<Buffer> reply_into;
  std::chrono::steady_clock::time_point deadline;
  std::string peer_name;
  std::uint64_t id = 0;
  std::uint32_t op = 0;
};

class Client {
 public:
  // Connects to `url` (see pick_url). `peer_name` names the server in errors
  // ("server 1 (uv://10.0.0.2:41234)").
  Client(Node& node, const std::string& url, std::string peer_name, std::uint32_t my_rank);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends a request; the reply's parts land in `reply_into` (the reply must
  // have exactly these lengths). `parts` and `reply_into` must stay valid
  // until the call completes. The id and sender are filled in.
  std::shared_ptr<Call> call(Header h, std::vector<Buffer> parts, std::vector<Buffer> reply_into);

  // Convenience: call(...)->wait().
  Header request(Header h, std::vector<Buffer> parts = {}, std::vector<Buffer> reply_into = {});

  const std::string& peer_name() const;
  // Closes the pipe; calls still in flight fail. Idempotent.
  void close();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace dtbench::rpc
