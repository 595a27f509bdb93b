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

}  // namespace dtbench::comm
