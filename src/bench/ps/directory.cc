#include "bench/ps/directory.h"

#include <fmt/format.h>

#include "comm/error_text.h"
#include "core/error.h"

namespace dtbench::bench::ps {

void put_text(c10d::Store& store, const std::string& key, const std::string& text) {
  store.set("dtbench/ps/" + key, std::vector<std::uint8_t>(text.begin(), text.end()));
}

std::string wait_text(c10d::Store& store, const std::string& key, std::chrono::milliseconds timeout,
                      const std::string& who) {
  const auto full = "dtbench/ps/" + key;
  try {
    store.wait({full}, timeout);
  } catch (const std::exception& e) {
    throw TimeoutError(fmt::format("{}: '{}' did not arrive in the store within {} ms: {}", who, key,
                                   timeout.count(), comm::one_line(e)));
  }
  const auto v = store.get(full);
  return std::string(v.begin(), v.end());
}

void publish(c10d::Store& store, const std::string& key, const rpc::Endpoint& ep) {
  put_text(store, key, rpc::encode_endpoint(ep));
}

rpc::Endpoint lookup(c10d::Store& store, const std::string& key, std::chrono::milliseconds timeout) {
  return rpc::decode_endpoint(
      wait_text(store, key, timeout, "no server address (that server never started or died)"));
}

}  // namespace dtbench::bench::ps
