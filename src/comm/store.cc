#include "comm/store.h"

#include <fmt/format.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/error_text.h"
#include "compat/torch_compat.h"
#include "core/error.h"

namespace dtbench::comm {

c10::intrusive_ptr<c10d::Store> connect_store(const launch::World& world,
                                              std::chrono::milliseconds timeout) {
  auto opts = compat::tcp_store_options();
  opts.port = static_cast<std::uint16_t>(world.master_port);
  opts.isServer = world.rank == 0;
  opts.numWorkers = static_cast<std::size_t>(world.world_size);
  opts.waitWorkers = true;
  opts.timeout = timeout;
  try {
    return c10::make_intrusive<c10d::TCPStore>(world.master_addr, opts);
  } catch (const std::exception& e) {
    const std::string why = one_line(e);
    if (world.rank == 0) {
      throw CommError(fmt::format(
          "rendezvous: rank 0 could not host the store on {}:{} with {} rank(s) joining within "
          "{} ms: {}",
          world.master_addr, world.master_port, world.world_size, timeout.count(), why));
    }
    throw CommError(fmt::format("rendezvous: rank {} could not reach the store at {}:{} within "
                                "{} ms: {}",
                                world.rank, world.master_addr, world.master_port, timeout.count(),
                                why));
  }
}

void store_barrier(c10d::Store& store, const std::string& name, int n,
                   std::chrono::milliseconds timeout) {
  const auto key = "dtbench/barrier/" + name;
  try {
    if (store.add(key, 1) == n) store.set(key + "/go", std::vector<std::uint8_t>{1});
    store.wait({key + "/go"}, timeout);
  } catch (const std::exception& e) {
    throw TimeoutError(fmt::format("barrier '{}': not all {} rank(s) arrived within {} ms ({})",
                                   name, n, timeout.count(), one_line(e)));
  }
}

}  // namespace dtbench::comm
