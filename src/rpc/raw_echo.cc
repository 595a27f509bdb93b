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
  std::map<std::string, std::vector<char>> slots;  // per message slot, reused
  std::vector<std::shared_ptr<tensorpipe::Pipe>> pipes;

  void accept_next() {
    auto self = shared_from_this();
    listener->accept([self](const tensorpipe::Error& e, std::shared_ptr<tensorpipe::Pipe> p) {
      if (e) return;
      {
        std::lock_guard<std::mutex> lock(self->mu);
        self->pipes.push_back(p);
      }
      self->serve(p);
      self->accept_next();
    });
  }

  void serve(std::shared_ptr<tensorpipe::Pipe> p) {
    auto self = shared_from_this();
    p->readDescriptor([self, p](const tensorpipe::Error& e, tensorpipe::Descriptor d) {
      if (e) return;
      const auto n = length_of(d);
      char* buf = nullptr;
      {
        std::lock_guard<std::mutex> lock(self->mu);
        auto& v = self->slots[d.metadata];
        if (v.size() != n) v.resize(n);
        buf = v.data();
      }
      const std::string slot = d.metadata;
      p->read(one_buffer(d, buf), [self, p, slot, buf, n](const tensorpipe::Error& e2) {
        if (e2) return;
        p->write(echo_message(slot, buf, n), [](const tensorpipe::Error&) {});
        self->serve(p);
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

std::vector<double> raw_echo_rounds(Node& node, const std::string& url,
                                    const std::vector<std::size_t>& sizes, int iters, int warmup) {
  auto pipe = node.context().connect(url);
  // Sources and destinations live until the node is closed (callbacks of an
  // abandoned round may still touch them).
  auto src = std::make_shared<std::vector<std::vector<char>>>();
  auto dst = std::make_shared<std::vector<std::vector<char>>>();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    src->emplace_back(sizes[i], static_cast<char>(i + 1));
    dst->emplace_back(sizes[i]);
  }
  std::vector<double> out;
  for (int it = 0; it < warmup + iters; ++it) {
    auto r = std::make_shared<EchoRound>();
    r->pipe = pipe;
    r->dst = dst.get();
    r->left = 2 * sizes.size();  // writes done + echoes read
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < sizes.size(); ++i)
      pipe->write(echo_message(std::to_string(i), (*src)[i].data(), sizes[i]),
                  [r, src, dst](const tensorpipe::Error& e) { r->done_one(e); });
    read_echo(r, 0, sizes.size());
    std::unique_lock<std::mutex> lock(r->mu);
    const bool finished =
        r->cv.wait_until(lock, t0 + node.options().timeout, [&] { return r->left == 0; });
    if (!finished || !r->error.empty()) {
      const std::string why = finished ? r->error : "";
      r->abandoned = true;
      lock.unlock();
      pipe->close();
      node.close();  // joins the loop: no callback touches the buffers after this
      if (!finished)
        throw TimeoutError(fmt::format(
            "rpc: raw TensorPipe echo round {} did not finish within {} ms", it,
            node.options().timeout.count()));
      throw CommError("rpc: raw TensorPipe echo failed: " + why);
    }
    if (it >= warmup) out.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if ((*dst)[i] != (*src)[i])
      throw VerificationError(fmt::format("raw echo: message {} came back altered", i));
  pipe->close();
  return out;
}

}  // namespace dtbench::rpc
