// rpc::Server: accepts pipes, receives requests into the service's buffers on
// the event loop, runs the service on the handler thread, sends replies.
#include "rpc/node.h"

#include <deque>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/net_route.h"
#include "rpc/tp_context.h"

namespace dtbench::rpc {
namespace {

using Clock = std::chrono::steady_clock;
using detail::allocation_for;
using detail::describe_lengths;
using detail::lengths_match;
using detail::lengths_of;
using detail::make_message;

}  // namespace

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

  // A request the service handles on the event loop (handle_inline).
  void run_inline(Request req) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return;
      last_activity = Clock::now();
    }
    try {
      service->handle(std::move(req));
    } catch (const std::exception& e) {
      finish(fmt::format("{}: {}", node.name(), e.what()));
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
        if (self->service->handle_inline(h))
          self->run_inline(std::move(req));
        else
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
  impl_->endpoint.host_id = net::host_identity();
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

}  // namespace dtbench::rpc
