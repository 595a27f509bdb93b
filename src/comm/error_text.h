#pragma once
// Turns exceptions from the engines (c10::Error with its multi-line
// backtraces, gloo's enforce messages) into one readable line.
#include <exception>
#include <string>

namespace dtbench::comm {

// The first meaningful line of the exception's message.
std::string one_line(const std::exception& e);

// Rethrows the exception in `fn` as CommError/TimeoutError with `context`
// prefixed, keeping dtbench's own exception types as they are.
std::exception_ptr translate(std::exception_ptr error, const std::string& context);

// True for what a backend raises when a peer is gone or silent (a timeout, a
// connection closed or reset by the peer), whatever the exception type.
bool is_peer_failure(const std::exception& e);

}  // namespace dtbench::comm
