#include "comm/store.h"

#include <thread>

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

std::string progress_key(const std::string& progress) { return "dtbench/progress/" + progress; }

void store_barrier(c10d::Store& store, const std::string& name, int n,
                   std::chrono::milliseconds timeout, const std::string& progress) {
  const auto key = "dtbench/barrier/" + name;
  const auto go = key + "/go";
  try {
    if (store.add(key, 1) == n) store.set(go, std::vector<std::uint8_t>{1});
    if (progress.empty()) return store.wait({go}, timeout);
  } catch (const std::exception& e) {
    throw TimeoutError(fmt::format("barrier '{}': not all {} rank(s) arrived within {} ms ({})",
                                   name, n, timeout.count(), one_line(e)));
  }
  std::int64_t seen = -1;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!store.check({go})) {
    const auto now_seen = store.add(progress_key(progress), 0);
    if (now_seen != seen) {
      seen = now_seen;
      deadline = std::chrono::steady_clock::now() + timeout;
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw TimeoutError(fmt::format("barrier '{}': no progress from the {} rank(s) still working "
                                     "for {} ms (one hung or died)",
                                     name, n, timeout.count()));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void store_final_barrier(c10d::Store& store, const std::string& name, int n,
                         std::chrono::milliseconds timeout, bool host) {
  store_barrier(store, name, n, timeout);
  const auto left = "dtbench/barrier/" + name + "/left";
  store.add(left, 1);
  if (!host) return;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (store.add(left, 0) < n) {
    if (std::chrono::steady_clock::now() > deadline)
      throw TimeoutError(fmt::format("barrier '{}': not every rank left within {} ms", name, timeout.count()));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace dtbench::comm
