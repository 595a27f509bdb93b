#include <fmt/format.h>

#include "core/error.h"
#include "rpc/tp_context.h"

namespace dtbench::rpc::detail {
namespace {

std::size_t total_bytes(const std::vector<Buffer>& parts) {
  std::size_t n = 0;
  for (const auto& p : parts) n += p.bytes;
  return n;
}

}  // namespace

// Parts travel inline when small, as tensors over the channel otherwise.
tensorpipe::Message make_message(std::string metadata, const std::vector<Buffer>& parts) {
  tensorpipe::Message m;
  m.metadata = std::move(metadata);
  const bool inline_parts = total_bytes(parts) <= kInlineLimit;
  for (const auto& p : parts) {
    DTBENCH_CHECK(p.bytes > 0 && p.data != nullptr, "rpc: empty message part");
    if (inline_parts) {
      tensorpipe::Message::Payload pl;
      pl.data = p.data;
      pl.length = p.bytes;
      m.payloads.push_back(std::move(pl));
    } else {
      tensorpipe::Message::Tensor t;
      t.buffer = tensorpipe::CpuBuffer{p.data};
      t.length = p.bytes;
      m.tensors.push_back(std::move(t));
    }
  }
  return m;
}

tensorpipe::Message make_message(const Header& h, const std::vector<Buffer>& parts) {
  return make_message(encode(h), parts);
}

std::vector<std::size_t> lengths_of(const tensorpipe::Descriptor& d) {
  std::vector<std::size_t> out;
  for (const auto& p : d.payloads) out.push_back(p.length);
  for (const auto& t : d.tensors) out.push_back(t.length);
  return out;
}

tensorpipe::Allocation allocation_for(const tensorpipe::Descriptor& d,
                                      const std::vector<Buffer>& into) {
  tensorpipe::Allocation a;
  std::size_t i = 0;
  for (std::size_t k = 0; k < d.payloads.size(); ++k, ++i) a.payloads.push_back({into[i].data});
  for (std::size_t k = 0; k < d.tensors.size(); ++k, ++i) {
    tensorpipe::Allocation::Tensor t;
    t.buffer = tensorpipe::CpuBuffer{into[i].data};
    a.tensors.push_back(std::move(t));
  }
  return a;
}

bool lengths_match(const std::vector<std::size_t>& got, const std::vector<Buffer>& into) {
  if (got.size() != into.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != into[i].bytes) return false;
  return true;
}

std::string describe_lengths(const std::vector<std::size_t>& v) {
  std::string s;
  for (auto n : v) s += (s.empty() ? "" : ",") + std::to_string(n);
  return "[" + s + "]";
}

}  // namespace dtbench::rpc::detail
