// The link ceiling's raw TCP stream, on loopback: the receiver times what
// the sender streams; a port nobody listens on, a listener nobody connects
// to, or a receiver that stops reading fails within its timeout with one
// IoError.
#include "core/tcp_stream.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "core/error.h"

namespace dtbench::net {
namespace {

using std::chrono::milliseconds;

TEST(TcpStream, TheReceiverTimesTheStream) {
  StreamListener listener("127.0.0.1");
  std::int64_t sent = 0;
  std::thread sender([&] { sent = send_stream("127.0.0.1", listener.port(), 0.2, milliseconds(5000)); });
  const double rate = listener.receive(milliseconds(5000));
  sender.join();
  EXPECT_GT(sent, 1 << 20);
  // What was sent over 0.2 s, less the first read's bytes: within a factor
  // of the sent bytes over the stream's time (loopback, 2 cores).
  EXPECT_GT(rate, static_cast<double>(sent) / 0.2 / 4) << "sent " << sent;
  EXPECT_LT(rate, static_cast<double>(sent) / 0.2 * 4) << "sent " << sent;
}

TEST(TcpStream, FailuresAreBoundedAndNamed) {
  int closed_port = 0;
  {
    StreamListener gone("127.0.0.1");
    closed_port = gone.port();
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(send_stream("127.0.0.1", closed_port, 0.1, milliseconds(300)), IoError);
  StreamListener lonely("127.0.0.1");
  EXPECT_THROW(lonely.receive(milliseconds(300)), IoError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_THROW(StreamListener("not-an-address"), IoError);
}

// A receiver that never reads (a stopped node): once the socket buffers are
// full the sender makes no progress, and gives up after its timeout rather
// than sending for the whole stream's time or blocking for minutes.
TEST(TcpStream, ASenderNobodyReadsGivesUpAfterItsTimeout) {
  StreamListener deaf("127.0.0.1");  // never accepts: the kernel's backlog holds the connection
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(send_stream("127.0.0.1", deaf.port(), 30, milliseconds(300)), IoError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace dtbench::net
