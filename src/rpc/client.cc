// rpc::Client and rpc::Call: requests with ids on one pipe, replies matched
// back by id into the caller's buffers, deadlines, a broken pipe failing all.
#include "rpc/node.h"

#include <map>

#include <fmt/format.h>

#include "core/error.h"
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
