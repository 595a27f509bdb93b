#include "comm/store.h"

#include <unistd.h>

#include <future>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/error_text.h"
#include "comm/liveness.h"
#include "compat/c10d_compat.h"
#include "core/error.h"
#include "core/net_route.h"

namespace dtbench::comm {

namespace {

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string text_of(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }

// Launchers that disagree (--nnodes, --nproc-per-node, WORLD_SIZE) give two
// processes one rank, or ranks different world sizes; c10d would then hang
// or mix up peers. Each rank claims its number (first claim wins) and
// compares its world size with rank 0's.
void check_job(c10d::Store& store, const launch::World& world, std::chrono::milliseconds timeout) {
  const std::string host = net::host_identity();
  const std::string me = fmt::format("pid {} on {} (world size {})", getpid(),
                                     host.substr(0, host.find('/')), world.world_size);
  const auto claim = text_of(store.compareSet(fmt::format("dtbench/job/rank/{}", world.rank), {},
                                              bytes_of(me)));
  if (claim != me)
    throw UsageError(fmt::format(
        "rendezvous: rank {} is already taken by {}; do the launchers agree on "
        "--nnodes/--nproc-per-node/--node-rank?",
        world.rank, claim));
  const std::string size_key = "dtbench/job/world_size";
  if (world.rank == 0) store.set(size_key, bytes_of(std::to_string(world.world_size)));
  std::string size0;
  try {
    store.wait({size_key}, timeout);
    size0 = text_of(store.get(size_key));
  } catch (const std::exception& e) {
    throw TimeoutError(fmt::format("rendezvous: rank 0 did not confirm the job within {} ms ({})",
                                   timeout.count(), one_line(e)));
  }
  if (size0 != std::to_string(world.world_size))
    throw UsageError(fmt::format(
        "rendezvous: this rank ({}) was started with world size {} but rank 0 with {}; do the "
        "launchers agree on --nnodes/--nproc-per-node?",
        world.rank, world.world_size, size0));
}

}  // namespace

c10::intrusive_ptr<c10d::Store> connect_store(const launch::World& world,
                                              std::chrono::milliseconds timeout) {
  // Under torchrun the agent's store is already at MASTER_PORT: join it, or,
  // where this LibTorch cannot talk to it, host one at MASTER_PORT + 1.
  // dtbench's own launcher hosts a store of this very LibTorch: always joined.
  // An earlier job's heartbeat (a sweep in this process) ends first: it may
  // hold that job's store, and with it this port.
  stop_heartbeat();
  const bool dtbench_agent = world.agent_store && world.agent_store_torch == compat::torch_version();
  const bool join_agent = world.agent_store && (dtbench_agent || compat::can_join_torchrun_store());
  // torchrun's store outlives a restart of the workers: keys of an earlier
  // attempt must not be seen by this one. dtbench's launcher never restarts
  // them, and publishes a failed rank under the job's own keys.
  const std::string prefix =
      join_agent && !dtbench_agent ? fmt::format("dtbench/attempt{}", world.restart_count) : "";
  const int port = world.master_port + (world.agent_store && !join_agent ? 1 : 0);
  if (port > 65535)
    throw UsageError(fmt::format("rendezvous: MASTER_PORT {} leaves no port for the store beside torchrun's",
                                 world.master_port));
  auto opts = compat::tcp_store_options();
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = world.rank == 0 && !join_agent;
  opts.numWorkers = static_cast<std::size_t>(world.world_size);
  opts.waitWorkers = true;
  opts.timeout = timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(world.master_addr, opts);
  } catch (const std::exception& e) {
    const std::string why = one_line(e);
    if (world.rank == 0) {
      throw CommError(fmt::format(
          "rendezvous: rank 0 could not host the store on {}:{} with {} rank(s) joining within "
          "{} ms: {}",
          world.master_addr, port, world.world_size, timeout.count(), why));
    }
    throw CommError(fmt::format("rendezvous: rank {} could not reach the store at {}:{} within "
                                "{} ms: {}",
                                world.rank, world.master_addr, port, timeout.count(), why));
  }
  if (!prefix.empty()) store = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
  check_job(*store, world, timeout);
  StoreEndpoint at;
  at.addr = world.master_addr;
  at.port = port;
  at.prefix = prefix;
  at.hosted_by_rank0 = !join_agent;
  std::shared_ptr<void> keep;
  if (opts.isServer) keep = std::shared_ptr<void>(nullptr, [store](void*) mutable { store.reset(); });
  start_heartbeat(at, world.rank, world.world_size, std::move(keep));
  return store;
}

LauncherStore host_launcher_store(int port) {
  if (port < 0 || port > 65535) throw UsageError(fmt::format("launch: store port {} is out of range", port));
  auto opts = compat::tcp_store_options();
  opts.port = static_cast<std::uint16_t>(port);  // 0: the kernel's choice, kept
  opts.isServer = true;
  opts.waitWorkers = false;  // the workers start after this returns
  LauncherStore out;
  try {
    auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
    out.port = static_cast<int>(store->getPort());
    out.keep = std::shared_ptr<void>(nullptr, [store](void*) mutable { store.reset(); });
  } catch (const std::exception& e) {
    throw CommError(fmt::format("launch: cannot host the job's store on port {}: {}", port, one_line(e)));
  }
  out.version = compat::torch_version();
  return out;
}

std::string launcher_store_version() { return compat::torch_version(); }

namespace {
const char* const kFailedKey = "dtbench/failed";
}  // namespace

bool publish_failure(const std::string& master_addr, int master_port, const std::string& text,
                     std::chrono::milliseconds timeout) {
  auto opts = compat::tcp_store_options();
  opts.port = static_cast<std::uint16_t>(master_port);
  opts.isServer = false;
  opts.waitWorkers = false;
  opts.timeout = timeout;
  try {
    c10d::TCPStore store(master_addr, opts);
    store.compareSet(kFailedKey, {}, bytes_of(text));  // the first failure wins
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::string published_failure(const c10::intrusive_ptr<c10d::Store>& store,
                              std::chrono::milliseconds wait) {
  if (!store) return "";
  // On a cut link a store call blocks for the store's own timeout: ask from
  // a detached thread and stop listening after `wait`.
  auto answer = std::make_shared<std::promise<std::string>>();
  auto future = answer->get_future();
  std::thread([store, answer, wait]() {
    std::string text;
    try {
      const auto deadline = std::chrono::steady_clock::now() + wait;
      while (std::chrono::steady_clock::now() < deadline) {
        if (store->check({kFailedKey})) {
          text = text_of(store->get(kFailedKey));
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    } catch (const std::exception&) {
    }
    answer->set_value(text);
  }).detach();
  if (future.wait_for(wait + std::chrono::milliseconds(200)) != std::future_status::ready) return "";
  return future.get();
}

std::string failure_cause(const c10::intrusive_ptr<c10d::Store>& store, std::chrono::milliseconds wait) {
  // Both questions at once: what a launcher published, and whose heartbeat
  // stood still (asked from a detached thread: a store that does not answer
  // must not hold this rank beyond `wait`).
  auto silent = std::make_shared<std::promise<std::string>>();
  auto verdict = silent->get_future();
  std::thread([silent, wait]() {
    std::string text;
    try {
      text = silent_ranks(wait);
    } catch (const std::exception&) {
    }
    silent->set_value(text);
  }).detach();
  auto published = published_failure(store, wait);
  if (!published.empty()) return published;
  if (verdict.wait_for(std::chrono::milliseconds(1500)) != std::future_status::ready) return "";
  return verdict.get();
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
  // Every rank's heartbeat connection closes before the host may end the
  // store (see start_heartbeat).
  stop_heartbeat();
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

std::exception_ptr add_cause(std::exception_ptr error, const std::string& cause) {
  if (cause.empty()) return error;
  try {
    std::rethrow_exception(error);
  } catch (const TimeoutError& e) {
    if (std::string(e.what()).find("; cause: ") != std::string::npos) return error;
    return std::make_exception_ptr(TimeoutError(std::string(e.what()) + "; cause: " + cause));
  } catch (const CommError& e) {
    if (std::string(e.what()).find("; cause: ") != std::string::npos) return error;
    return std::make_exception_ptr(CommError(std::string(e.what()) + "; cause: " + cause));
  } catch (...) {
    return error;
  }
}

std::exception_ptr with_failure_cause(std::exception_ptr error,
                                        const c10::intrusive_ptr<c10d::Store>& store) {
  try {
    std::rethrow_exception(error);
  } catch (const CommError& e) {  // TimeoutError too
    if (std::string(e.what()).find("; cause: ") != std::string::npos) return error;
    return add_cause(error, failure_cause(store, std::chrono::milliseconds(2000)));
  } catch (...) {
    return error;
  }
}

}  // namespace dtbench::comm
