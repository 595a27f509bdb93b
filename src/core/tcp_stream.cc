#include "core/tcp_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::net {
namespace {

using Clock = std::chrono::steady_clock;

sockaddr_in address(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1)
    throw IoError(fmt::format("link ceiling: '{}' is not an IPv4 address", ip));
  return a;
}

// Waits until fd is ready for `events` or `left` passes; false on timeout.
bool wait_for(int fd, short events, std::chrono::milliseconds left) {
  pollfd p{fd, events, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
  } while (rc < 0 && errno == EINTR);
  return rc > 0;
}
bool wait_readable(int fd, std::chrono::milliseconds left) { return wait_for(fd, POLLIN, left); }

// Connects fd (blocking) to `a` within `left`: a non-blocking connect
// polled against the time left, so a dropped SYN cannot hold it for the
// kernel's two minutes. Returns 0 or the errno of the failure (ETIMEDOUT
// when the time ran out).
int connect_within(int fd, const sockaddr_in& a, std::chrono::milliseconds left) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int err = 0;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      if (!wait_for(fd, POLLOUT, left)) {
        err = ETIMEDOUT;
      } else {
        socklen_t len = sizeof(err);
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
  }
  ::fcntl(fd, F_SETFL, flags);
  return err;
}

constexpr std::size_t kChunk = 1 << 20;

}  // namespace

StreamListener::StreamListener(const std::string& ip) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw IoError(fmt::format("link ceiling: socket: {}", std::strerror(errno)));
  sockaddr_in a = address(ip, 0);
  socklen_t len = sizeof(a);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd_, 4) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd_);
    throw IoError(fmt::format("link ceiling: cannot listen on {}: {}", ip, why));
  }
  port_ = ntohs(a.sin_port);
}

StreamListener::~StreamListener() {
  if (fd_ >= 0) ::close(fd_);
}

double StreamListener::receive(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto left = [&] { return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()); };
  if (!wait_readable(fd_, left())) throw IoError("link ceiling: no peer connected to the stream in time");
  const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) throw IoError(fmt::format("link ceiling: accept: {}", std::strerror(errno)));
  std::vector<char> buf(kChunk);
  // (arrival, bytes so far) of every read, to time the stream past its start.
  std::vector<std::pair<Clock::time_point, std::int64_t>> reads;
  std::int64_t bytes = 0;
  while (true) {
    if (!wait_readable(c, left())) {
      ::close(c);
      throw IoError("link ceiling: the stream stalled");
    }
    const ssize_t n = ::recv(c, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(c);
      throw IoError(fmt::format("link ceiling: the stream broke: {}", why));
    }
    if (n == 0) break;
    bytes += n;
    reads.emplace_back(Clock::now(), bytes);
  }
  ::close(c);
  if (reads.size() < 2) return 0;
  // The rate after the first fifth of the stream's time: TCP's slow start
  // and a shaper's initial burst are behind it.
  const auto first = reads.front().first, last = reads.back().first;
  const auto from = first + (last - first) / 5;
  std::size_t k = 0;
  while (k + 2 < reads.size() && reads[k].first < from) ++k;
  const double s = std::chrono::duration<double>(last - reads[k].first).count();
  return s > 0 ? static_cast<double>(bytes - reads[k].second) / s : 0;
}

std::int64_t send_stream(const std::string& ip, int port, double seconds, std::chrono::milliseconds timeout) {
  const sockaddr_in a = address(ip, port);
  const auto deadline = Clock::now() + timeout;
  int fd = -1;
  while (true) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw IoError(fmt::format("link ceiling: socket: {}", std::strerror(errno)));
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    const int err = connect_within(fd, a, left);
    if (err == 0) break;
    const std::string why = std::strerror(err);
    ::close(fd);
    if (Clock::now() >= deadline) throw IoError(fmt::format("link ceiling: cannot connect to {}:{}: {}", ip, port, why));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // A receiver that stops reading (a stopped or partitioned node) ends
  // the stream after `timeout` of no progress, not the kernel's minutes.
  const timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  const std::vector<char> buf(kChunk, 1);
  std::int64_t sent = 0;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    const ssize_t n = ::send(fd, buf.data(), buf.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = errno == EAGAIN || errno == EWOULDBLOCK
                                  ? fmt::format("no progress within {} ms", timeout.count())
                                  : std::strerror(errno);
      ::close(fd);
      throw IoError(fmt::format("link ceiling: send to {}:{}: {}", ip, port, why));
    }
    sent += n;
  }
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
  return sent;
}

}  // namespace dtbench::net
