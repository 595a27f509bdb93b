#include "bench/ps/directory.h"

#include <fmt/format.h>

#include "comm/error_text.h"
#include "core/error.h"

namespace dtbench::bench::ps {

void publish(c10d::Store& store, const std::string& key, const rpc::Endpoint& ep) {
  const auto text = rpc::encode_endpoint(ep);
  store.set("dtbench/ps/" + key, std::vector<std::uint8_t>(text.begin(), text.end()));
}

rpc::Endpoint lookup(c10d::Store& store, const std::string& key, std::chrono::milliseconds timeout) {
  const auto full = "dtbench/ps/" + key;
  try {
    store.wait({full}, timeout);
  } catch (const std::exception& e) {
    throw TimeoutError(fmt::format("no address for '{}' in the store within {} ms (that server "
                                   "never started or died): {}",
                                   key, timeout.count(), comm::one_line(e)));
  }
  const auto v = store.get(full);
  return rpc::decode_endpoint(std::string(v.begin(), v.end()));
}

}  // namespace dtbench::bench::ps
