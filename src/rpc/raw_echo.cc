#include "core/net_route.h"
#include "rpc/raw_echo.h"

#include <condition_variable>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "core/error.h"
#include "rpc/tp_context.h"

namespace dtbench::rpc {
namespace {

using Clock = std::chrono::steady_clock;

std::size_t length_of(const tensorpipe::Descriptor& d) {
  const auto lengths = detail::lengths_of(d);
  return lengths.size() == 1 ? lengths[0] : 0;
}

// One part per message, sent and received with the RPC's own helpers; the
// metadata is the bare slot number (no dtbench header).
tensorpipe::Message echo_message(const std::string& slot, void* data, std::size_t n) {
  return detail::make_message(slot, {{data, n}});
}

tensorpipe::Allocation one_buffer(const tensorpipe::Descriptor& d, void* data) {
  return detail::allocation_for(d, {{data, length_of(d)}});
}

}  // namespace

struct RawEchoServer::Impl : std::enable_shared_from_this<RawEchoServer::Impl> {
  std::shared_ptr<tensorpipe::Listener> listener;
  Endpoint endpoint;
  std::mutex mu;
  std::vector<std::shared_ptr<tensorpipe::Pipe>> pipes;
  // Per pipe (one client each), per message slot: reused from round to round.
  using Slots = std::map<std::string, std::vector<char>>;

  void accept_next() {
    auto self = shared_from_this();
    listener->accept([self](const tensorpipe::Error& e, std::shared_ptr<tensorpipe::Pipe> p) {
      if (e) return;
      {
        std::lock_guard<std::mutex> lock(self->mu);
        self->pipes.push_back(p);
      }
      self->serve(p, std::make_shared<Slots>());
      self->accept_next();
    });
  }

  // Callbacks of one pipe run one after another, so its slots need no lock;
  // the client sends a slot again only after its echo came back.
  void serve(std::shared_ptr<tensorpipe::Pipe> p, std::shared_ptr<Slots> slots) {
    auto self = shared_from_this();
    p->readDescriptor([self, p, slots](const tensorpipe::Error& e, tensorpipe::Descriptor d) {
      if (e) return;
      const auto n = length_of(d);
      auto& v = (*slots)[d.metadata];
      if (v.size() != n) v.resize(n);
      char* buf = v.data();
      const std::string slot = d.metadata;
      p->read(one_buffer(d, buf), [self, p, slots, slot, buf, n](const tensorpipe::Error& e2) {
        if (e2) return;
        p->write(echo_message(slot, buf, n), [slots](const tensorpipe::Error&) {});
        self->serve(p, slots);
      });
    });
  }
};

RawEchoServer::RawEchoServer(Node& node) : impl_(std::make_shared<Impl>()) {
  impl_->listener = node.context().listen(detail::listen_urls(node.options()));
  impl_->endpoint.host_id = net::host_identity();
  for (const auto& [transport, addr] : impl_->listener->addresses())
    impl_->endpoint.urls.push_back(impl_->listener->url(transport));
  impl_->accept_next();
}

RawEchoServer::~RawEchoServer() { stop(); }

Endpoint RawEchoServer::endpoint() const { return impl_->endpoint; }

void RawEchoServer::stop() {
  if (impl_->listener) impl_->listener->close();
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto& p : impl_->pipes) p->close();
  impl_->pipes.clear();
}

namespace {

struct EchoRound {
  std::shared_ptr<tensorpipe::Pipe> pipe;
  std::vector<std::vector<char>>* dst = nullptr;  // valid while left > 0 or until the pipe closed
  std::mutex mu;
  std::condition_variable cv;
  std::size_t left = 0;
  std::string error;
  bool abandoned = false;

  void done_one(const tensorpipe::Error& e) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (e && error.empty()) error = detail::what(e);
      if (left > 0) --left;
    }
    cv.notify_all();
  }
};

// Echoes come back in order on the one pipe: read them one after another.
void read_echo(std::shared_ptr<EchoRound> r, std::size_t i, std::size_t n) {
  if (i == n) return;
  r->pipe->readDescriptor([r, i, n](const tensorpipe::Error& e, tensorpipe::Descriptor d) {
    if (e) {
      for (std::size_t k = i; k < n; ++k) r->done_one(e);
      return;
    }
    void* into = nullptr;
    {
      std::lock_guard<std::mutex> lock(r->mu);
      if (r->abandoned || length_of(d) != (*r->dst)[i].size()) {
        r->error = r->abandoned ? "abandoned" : "echo of the wrong length";
        r->left = 0;
        r->cv.notify_all();
        return;
      }
      into = (*r->dst)[i].data();
    }
    r->pipe->read(one_buffer(d, into), [r, i, n](const tensorpipe::Error& e2) {
      r->done_one(e2);
      if (!e2) read_echo(r, i + 1, n);
      else
        for (std::size_t k = i + 1; k < n; ++k) r->done_one(e2);
    });
  });
}

}  // namespace

std::vector<double> raw_echo_rounds(Node& node, const std::vector<EchoTarget>& targets, int iters,
                                    int warmup, bool one_at_a_time) {
  // One pipe per target. Sources and destinations live until the node is
  // closed (callbacks of an abandoned round may still touch them).
  struct Peer {
    std::shared_ptr<tensorpipe::Pipe> pipe;
    std::shared_ptr<std::vector<std::vector<char>>> src, dst;
  };
  std::vector<Peer> peers;
  for (const auto& t : targets) {
    if (t.sizes.empty()) continue;
    Peer p;
    p.pipe = node.context().connect(t.url);
    p.src = std::make_shared<std::vector<std::vector<char>>>();
    p.dst = std::make_shared<std::vector<std::vector<char>>>();
    for (std::size_t i = 0; i < t.sizes.size(); ++i) {
      p.src->emplace_back(t.sizes[i], static_cast<char>(i + 1 + peers.size()));
      p.dst->emplace_back(t.sizes[i]);
    }
    peers.push_back(std::move(p));
  }
  std::vector<double> out;
  for (int it = 0; it < warmup + iters; ++it) {
    std::vector<std::shared_ptr<EchoRound>> rounds;
    const auto t0 = Clock::now();
    bool finished = true;
    std::string why;
    auto wait = [&](EchoRound& r) {
      std::unique_lock<std::mutex> lock(r.mu);
      if (!r.cv.wait_until(lock, t0 + node.options().timeout, [&] { return r.left == 0; }))
        finished = false;
      else if (!r.error.empty() && why.empty())
        why = r.error;
    };
    for (auto& p : peers) {
      const std::size_t n = p.src->size();
      auto r = std::make_shared<EchoRound>();
      r->pipe = p.pipe;
      r->dst = p.dst.get();
      r->left = 2 * n;  // writes done + echoes read
      for (std::size_t i = 0; i < n; ++i)
        p.pipe->write(echo_message(std::to_string(i), (*p.src)[i].data(), (*p.src)[i].size()),
                      [r, src = p.src, dst = p.dst](const tensorpipe::Error& e) { r->done_one(e); });
      read_echo(r, 0, n);
      rounds.push_back(r);
      if (one_at_a_time) {
        wait(*r);
        if (!finished || !why.empty()) break;
      }
    }
    if (!one_at_a_time)
      for (auto& r : rounds) wait(*r);
    if (!finished || !why.empty()) {
      for (auto& r : rounds) {
        std::lock_guard<std::mutex> lock(r->mu);
        r->abandoned = true;
      }
      for (auto& p : peers) p.pipe->close();
      node.close();  // joins the loop: no callback touches the buffers after this
      if (!finished)
        throw TimeoutError(fmt::format(
            "rpc: raw TensorPipe echo round {} did not finish within {} ms", it,
            node.options().timeout.count()));
      throw CommError("rpc: raw TensorPipe echo failed: " + why);
    }
    if (it >= warmup) out.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  for (std::size_t k = 0; k < peers.size(); ++k)
    for (std::size_t i = 0; i < peers[k].src->size(); ++i)
      if ((*peers[k].dst)[i] != (*peers[k].src)[i])
        throw VerificationError(fmt::format("raw echo: message {} to target {} came back altered", i, k));
  for (auto& p : peers) p.pipe->close();
  return out;
}

}  // namespace dtbench::rpc
