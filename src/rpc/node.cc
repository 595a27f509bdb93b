#include "rpc/node.h"

#include <deque>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/log.h"
#include "rpc/tp_context.h"

namespace dtbench::rpc {
namespace {

using Clock = std::chrono::steady_clock;

std::size_t total_bytes(const std::vector<Buffer>& parts) {
  std::size_t n = 0;
  for (const auto& p : parts) n += p.bytes;
  return n;
}

// Parts travel inline when small, as tensors over the channel otherwise.
tensorpipe::Message make_message(const Header& h, const std::vector<Buffer>& parts) {
  tensorpipe::Message m;
  m.metadata = encode(h);
  const bool inline_parts = total_bytes(parts) <= kInlineLimit;
  for (const auto& p : parts) {
    DTBENCH_CHECK(p.bytes > 0 && p.data != nullptr, "rpc: empty message part");
    if (inline_parts) {
      tensorpipe::Message::Payload pl;
      pl.data = p.data;
      pl.length = p.bytes;
      m.payloads.push_back(std::move(pl));
    } else {
      tensorpipe::Message::Tensor t;
      t.buffer = tensorpipe::CpuBuffer{p.data};
      t.length = p.bytes;
      m.tensors.push_back(std::move(t));
    }
  }
  return m;
}

std::vector<std::size_t> lengths_of(const tensorpipe::Descriptor& d) {
  std::vector<std::size_t> out;
  for (const auto& p : d.payloads) out.push_back(p.length);
  for (const auto& t : d.tensors) out.push_back(t.length);
  return out;
}

tensorpipe::Allocation allocation_for(const tensorpipe::Descriptor& d,
                                      const std::vector<Buffer>& into) {
  tensorpipe::Allocation a;
  std::size_t i = 0;
  for (std::size_t k = 0; k < d.payloads.size(); ++k, ++i) a.payloads.push_back({into[i].data});
  for (std::size_t k = 0; k < d.tensors.size(); ++k, ++i) {
    tensorpipe::Allocation::Tensor t;
    t.buffer = tensorpipe::CpuBuffer{into[i].data};
    a.tensors.push_back(std::move(t));
  }
  return a;
}

bool lengths_match(const std::vector<std::size_t>& got, const std::vector<Buffer>& into) {
  if (got.size() != into.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != into[i].bytes) return false;
  return true;
}

std::string describe_lengths(const std::vector<std::size_t>& v) {
  std::string s;
  for (auto n : v) s += (s.empty() ? "" : ",") + std::to_string(n);
  return "[" + s + "]";
}

}  // namespace

// ---------------------------------------------------------------- Node

Node::Node(const TransportOptions& opts, std::string name) : opts_(opts), name_(std::move(name)) {
  validate(opts_);
  ctx_ = detail::make_context(opts_, name_);
}

Node::~Node() { close(); }

void Node::close() {
  if (closed_) return;
  closed_ = true;
  ctx_->close();
  ctx_->join();
}

// ---------------------------------------------------------------- Server

struct Server::Impl : std::enable_shared_from_this<Server::Impl> {
  struct Connection {
    std::uint32_t peer = 0;
    std::shared_ptr<tensorpipe::Pipe> pipe;
    bool dropped = false;
  };

  Node& node;
  Service* service = nullptr;
  std::shared_ptr<tensorpipe::Listener> listener;
  Endpoint endpoint;

  std::mutex mu;
  std::condition_variable cv;
  std::map<std::uint32_t, std::shared_ptr<Connection>> connections;
  std::uint32_t next_peer = 0;
  std::deque<std::function<void()>> tasks;
  bool stopping = false;
  bool finished = false;
  std::string error;
  Clock::time_point last_activity = Clock::now();
  std::thread handler;

  explicit Impl(Node& n) : node(n) {}

  void post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return;
      tasks.push_back(std::move(task));
      last_activity = Clock::now();
    }
    cv.notify_all();
  }

  void finish(const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (finished) return;
      finished = true;
      error = why;
    }
    cv.notify_all();
  }

  void handler_loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stopping || !tasks.empty(); });
        if (stopping) return;
        task = std::move(tasks.front());
        tasks.pop_front();
      }
      try {
        task();
      } catch (const std::exception& e) {
        finish(fmt::format("{}: {}", node.name(), e.what()));
      }
    }
  }

  void accept_next() {
    auto self = shared_from_this();
    listener->accept([self](const tensorpipe::Error& e, std::shared_ptr<tensorpipe::Pipe> pipe) {
      if (e) return;  // listener closed
      auto c = std::make_shared<Connection>();
      c->pipe = std::move(pipe);
      {
        std::lock_guard<std::mutex> lock(self->mu);
        if (self->stopping) return;
        c->peer = self->next_peer++;
        self->connections[c->peer] = c;
      }
      self->read_next(c);
      self->accept_next();
    });
  }

  void drop(const std::shared_ptr<Connection>& c, const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (c->dropped) return;
      c->dropped = true;
      connections.erase(c->peer);
    }
    c->pipe->close();
    const auto peer = c->peer;
    post([this, peer, why] { service->disconnected(peer, why); });
  }

  void read_next(std::shared_ptr<Connection> c) {
    auto self = shared_from_this();
    c->pipe->readDescriptor([self, c](const tensorpipe::Error& e, tensorpipe::Descriptor d) {
      if (e) return self->drop(c, detail::what(e));
      Header h;
      try {
        h = decode(d.metadata);
      } catch (const std::exception& ex) {
        return self->drop(c, ex.what());
      }
      const auto lengths = lengths_of(d);
      std::vector<Buffer> into;
      std::string reject;
      {
        std::lock_guard<std::mutex> lock(self->mu);
        if (self->stopping) return;
        try {
          into = self->service->receive_into(h, lengths);
          if (!lengths_match(lengths, into))
            reject = fmt::format("{}: receive buffers do not match the request's parts {}",
                                 self->node.name(), describe_lengths(lengths));
        } catch (const std::exception& ex) {
          reject = ex.what();
        }
      }
      if (!reject.empty()) {
        // The pipe must still consume the parts: read them into scratch.
        auto scratch = std::make_shared<std::vector<std::vector<char>>>();
        into.clear();
        for (auto n : lengths) {
          scratch->emplace_back(n);
          into.push_back({scratch->back().data(), n});
        }
        c->pipe->read(allocation_for(d, into), [self, c, h, reject, scratch](const tensorpipe::Error& e2) {
          if (e2) return self->drop(c, detail::what(e2));
          self->reply_error(c->peer, h, reject);
          self->read_next(c);
        });
        return;
      }
      c->pipe->read(allocation_for(d, into), [self, c, h, into](const tensorpipe::Error& e2) {
        if (e2) return self->drop(c, detail::what(e2));
        Request req{c->peer, h, into};
        self->post([self, req]() mutable { self->service->handle(std::move(req)); });
        self->read_next(c);
      });
    });
  }

  void reply(std::uint32_t peer, Header h, std::vector<Buffer> parts, std::function<void()> sent) {
    std::shared_ptr<Connection> c;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = connections.find(peer);
      if (it == connections.end()) return;  // peer gone: nothing to answer
      c = it->second;
    }
    h.from = 0;
    auto self = shared_from_this();
    c->pipe->write(make_message(h, parts), [self, c, sent](const tensorpipe::Error& e) {
      if (e) self->drop(c, detail::what(e));
      if (sent) sent();
    });
  }

  void reply_error(std::uint32_t peer, const Header& request, const std::string& why) {
    Header h;
    h.id = request.id;
    h.op = request.op;
    h.key = request.key;
    h.status = kStatusError;
    h.text = why;
    reply(peer, std::move(h), {}, {});
  }
};

Server::Server(Node& node) : impl_(std::make_shared<Impl>(node)) {
  impl_->listener = node.context().listen(detail::listen_urls(node.options()));
  impl_->endpoint.host_id = host_identity();
  for (const auto& [transport, addr] : impl_->listener->addresses())
    impl_->endpoint.urls.push_back(impl_->listener->url(transport));
}

Server::~Server() { stop(); }

Endpoint Server::endpoint() const { return impl_->endpoint; }

void Server::start(Service* service) {
  impl_->service = service;
  impl_->last_activity = Clock::now();
  impl_->handler = std::thread([impl = impl_] { impl->handler_loop(); });
  impl_->accept_next();
}

void Server::reply(std::uint32_t peer, Header h, std::vector<Buffer> parts,
                   std::function<void()> sent) {
  impl_->reply(peer, std::move(h), std::move(parts), std::move(sent));
}

void Server::reply_error(std::uint32_t peer, const Header& request, const std::string& why) {
  impl_->reply_error(peer, request, why);
}

void Server::post(std::function<void()> task) { impl_->post(std::move(task)); }

void Server::finish(const std::string& error) { impl_->finish(error); }

std::string Server::wait(std::chrono::milliseconds idle_timeout) {
  auto& s = *impl_;
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    if (s.finished) return s.error;
    const auto deadline = s.last_activity + idle_timeout;
    if (Clock::now() >= deadline)
      return fmt::format("{}: no request for {} ms (a client hung or never connected)",
                         s.node.name(), idle_timeout.count());
    s.cv.wait_until(lock, deadline);
  }
}

void Server::stop() {
  auto& s = *impl_;
  std::vector<std::shared_ptr<Impl::Connection>> conns;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.stopping) return;
    s.stopping = true;
    for (auto& [peer, c] : s.connections) conns.push_back(c);
    s.connections.clear();
  }
  s.cv.notify_all();
  if (s.listener) s.listener->close();
  for (auto& c : conns) c->pipe->close();
  if (s.handler.joinable()) s.handler.join();
}

// ---------------------------------------------------------------- Client

Header Call::wait() {
  std::unique_lock<std::mutex> lock(mu);
  if (!cv.wait_until(lock, deadline, [&] { return pending == 0 || !error.empty(); }))
    throw TimeoutError(fmt::format("rpc: no reply from {} within the request timeout (request {}, op {})",
                                   peer_name, id, op));
  if (!error.empty()) throw CommError(error);
  if (reply.status != kStatusOk)
    throw CommError(fmt::format("{} refused request (op {}): {}", peer_name, op, reply.text));
  return reply;
}

bool Call::done() {
  std::lock_guard<std::mutex> lock(mu);
  return pending == 0 || !error.empty();
}

struct Client::Impl : std::enable_shared_from_this<Client::Impl> {
  Node& node;
  std::string peer_name;
  std::uint32_t rank = 0;
  std::shared_ptr<tensorpipe::Pipe> pipe;
  std::mutex mu;
  std::map<std::uint64_t, std::shared_ptr<Call>> calls;
  std::uint64_t next_id = 1;
  std::string broken;

  explicit Impl(Node& n) : node(n) {}

  static void complete_one(Call& c, const std::string& error) {
    {
      std::lock_guard<std::mutex> lock(c.mu);
      if (!error.empty() && c.error.empty()) c.error = error;
      if (c.pending > 0) --c.pending;
    }
    c.cv.notify_all();
  }

  void fail_all(const std::string& why) {
    std::map<std::uint64_t, std::shared_ptr<Call>> failed;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (broken.empty()) broken = why;
      failed.swap(calls);
    }
    for (auto& [id, c] : failed) complete_one(*c, why);
  }

  std::shared_ptr<Call> take(std::uint64_t id) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = calls.find(id);
    if (it == calls.end()) return nullptr;
    auto c = it->second;
    calls.erase(it);
    return c;
  }

  std::string lost(const std::string& why) const {
    return fmt::format("{} closed the connection or died ({})", peer_name, why);
  }

  void read_next() {
    auto self = shared_from_this();
    pipe->readDescriptor([self](const tensorpipe::Error& e, tensorpipe::Descriptor d) {
      if (e) return self->fail_all(self->lost(detail::what(e)));
      Header h;
      try {
        h = decode(d.metadata);
      } catch (const std::exception& ex) {
        return self->fail_all(fmt::format("{}: {}", self->peer_name, ex.what()));
      }
      auto call = self->take(h.id);
      if (!call)
        return self->fail_all(
            fmt::format("{} sent a reply to unknown request {} (protocol error)", self->peer_name, h.id));
      const auto lengths = lengths_of(d);
      std::vector<Buffer> into = call->reply_into;
      if (h.status == kStatusOk && !lengths_match(lengths, into)) {
        complete_one(*call, fmt::format("{} replied with parts {} where {} were expected",
                                        self->peer_name, describe_lengths(lengths),
                                        describe_lengths([&] {
                                          std::vector<std::size_t> v;
                                          for (auto& b : into) v.push_back(b.bytes);
                                          return v;
                                        }())));
        return self->fail_all("protocol error");
      }
      self->pipe->read(allocation_for(d, into), [self, call, h](const tensorpipe::Error& e2) {
        if (e2) {
          complete_one(*call, self->lost(detail::what(e2)));
          return self->fail_all(self->lost(detail::what(e2)));
        }
        {
          std::lock_guard<std::mutex> lock(call->mu);
          call->reply = h;
        }
        complete_one(*call, "");
        self->read_next();
      });
    });
  }
};

Client::Client(Node& node, const std::string& url, std::string peer_name, std::uint32_t my_rank)
    : impl_(std::make_shared<Impl>(node)) {
  impl_->peer_name = std::move(peer_name);
  impl_->rank = my_rank;
  impl_->pipe = node.context().connect(url);
  impl_->read_next();
}

Client::~Client() { close(); }

const std::string& Client::peer_name() const { return impl_->peer_name; }

std::shared_ptr<Call> Client::call(Header h, std::vector<Buffer> parts,
                                   std::vector<Buffer> reply_into) {
  auto& s = *impl_;
  auto c = std::make_shared<Call>();
  c->deadline = Clock::now() + s.node.options().timeout;
  c->peer_name = s.peer_name;
  c->reply_into = std::move(reply_into);
  c->op = h.op;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.broken.empty()) throw CommError(s.broken);
    h.id = s.next_id++;
    c->id = h.id;
    s.calls[h.id] = c;
  }
  h.from = s.rank;
  auto self = impl_;
  s.pipe->write(make_message(h, parts), [self, c](const tensorpipe::Error& e) {
    if (e) {
      Impl::complete_one(*c, self->lost(detail::what(e)));
      self->fail_all(self->lost(detail::what(e)));
      return;
    }
    Impl::complete_one(*c, "");
  });
  return c;
}

Header Client::request(Header h, std::vector<Buffer> parts, std::vector<Buffer> reply_into) {
  return call(std::move(h), std::move(parts), std::move(reply_into))->wait();
}

void Client::close() {
  impl_->fail_all(fmt::format("connection to {} closed", impl_->peer_name));
  impl_->pipe->close();
}

}  // namespace dtbench::rpc
