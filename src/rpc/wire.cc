#include "rpc/wire.h"

#include <cstring>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::rpc {
namespace {

constexpr std::uint32_t kMagic = 0x44545231;  // "DTR1"
constexpr std::size_t kFixed = 4 + 8 + 4 + 4 + 4 + 8 + 8 + 8;

template <typename T>
void put(std::string& out, T v) {
  unsigned char b[sizeof(T)];
  auto u = static_cast<std::uint64_t>(v);
  for (std::size_t i = 0; i < sizeof(T); ++i) b[i] = static_cast<unsigned char>(u >> (8 * i));
  out.append(reinterpret_cast<const char*>(b), sizeof(T));
}

template <typename T>
T get(const std::string& in, std::size_t& pos) {
  std::uint64_t u = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    u |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[pos + i])) << (8 * i);
  pos += sizeof(T);
  return static_cast<T>(u);
}

}  // namespace

std::string encode(const Header& h) {
  std::string out;
  out.reserve(kFixed + h.text.size());
  put(out, kMagic);
  put(out, h.id);
  put(out, h.op);
  put(out, h.status);
  put(out, h.from);
  put(out, h.key);
  put(out, h.arg0);
  put(out, h.arg1);
  out += h.text;
  return out;
}

Header decode(const std::string& bytes) {
  if (bytes.size() < kFixed)
    throw CommError(fmt::format("rpc: message header is {} bytes, expected at least {}",
                                bytes.size(), kFixed));
  std::size_t pos = 0;
  if (get<std::uint32_t>(bytes, pos) != kMagic)
    throw CommError("rpc: message is not a dtbench RPC message (bad magic; another program on this port?)");
  Header h;
  h.id = get<std::uint64_t>(bytes, pos);
  h.op = get<std::uint32_t>(bytes, pos);
  h.status = get<std::int32_t>(bytes, pos);
  h.from = get<std::uint32_t>(bytes, pos);
  h.key = get<std::uint64_t>(bytes, pos);
  h.arg0 = get<std::int64_t>(bytes, pos);
  h.arg1 = get<std::int64_t>(bytes, pos);
  h.text = bytes.substr(pos);
  return h;
}

}  // namespace dtbench::rpc
