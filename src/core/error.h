#pragma once
// Typed errors. User and I/O errors are exceptions that main() maps to exit
// codes (UsageError -> 2, everything else -> 1); internal invariants use
// DTBENCH_CHECK, which names the file and line.
#include <stdexcept>
#include <string>

namespace dtbench {

// Bad flags, values or input files: exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Files that cannot be read or written.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A collective, store or peer failed (dead rank, closed port, ...).
class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A wait ran past its deadline.
class TimeoutError : public CommError {
 public:
  using CommError::CommError;
};

// The backend cannot do what was asked (dtype, op or collective).
class UnsupportedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A benchmark's self-check found wrong results.
class VerificationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace dtbench

#define DTBENCH_CHECK(cond, msg)                                          \
  do {                                                                    \
    if (!(cond)) ::dtbench::check_failed(#cond, __FILE__, __LINE__, msg); \
  } while (0)
