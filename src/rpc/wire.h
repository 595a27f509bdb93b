#pragma once
// The fixed header every dtbench RPC message carries in TensorPipe's
// metadata string: request id, operation, status, sender, key and two
// arguments, then free text (an error message, a name). Little-endian,
// versioned; decode() rejects anything else with a one-line CommError.
#include <cstdint>
#include <string>

namespace dtbench::rpc {

struct Header {
  std::uint64_t id = 0;     // request id; a reply carries its request's id
  std::uint32_t op = 0;     // operation code (each service defines its own)
  std::int32_t status = 0;  // 0 = ok; otherwise `text` says what failed
  std::uint32_t from = 0;   // sender's rank
  std::uint64_t key = 0;    // service-defined (array key, table id, ...)
  std::int64_t arg0 = 0;    // service-defined (iteration, row count, ...)
  std::int64_t arg1 = 0;    // service-defined
  std::string text;
};

// Status codes shared by every service.
inline constexpr std::int32_t kStatusOk = 0;
inline constexpr std::int32_t kStatusError = 1;

std::string encode(const Header& h);
// Throws CommError on a short, foreign or wrong-version header.
Header decode(const std::string& bytes);

}  // namespace dtbench::rpc
