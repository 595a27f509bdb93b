#include "comm/liveness.h"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "compat/c10d_compat.h"

namespace dtbench::comm {

namespace {

constexpr auto kBeat = std::chrono::milliseconds(500);

std::string alive_key(int rank) { return fmt::format("dtbench/alive/{}", rank); }
// Set by a rank that stops beating on purpose: it finished, or it is itself
// failing (and will exit). Its silence then names nobody.
std::string gone_key(int rank) { return fmt::format("dtbench/gone/{}", rank); }
const std::vector<std::uint8_t> kOne{'1'};

// A client of its own to the job's store; throws when it cannot be reached
// within `timeout` (which also bounds every later request).
c10::intrusive_ptr<c10d::Store> open_client(const StoreEndpoint& at, std::chrono::milliseconds timeout) {
  // LibTorch 1.13's client gives up at once on a connect timeout under 1 s.
  timeout = std::max(timeout, std::chrono::milliseconds(1000));
  auto opts = compat::tcp_store_options();
  opts.port = static_cast<std::uint16_t>(at.port);
  opts.isServer = false;
  opts.waitWorkers = false;
  opts.timeout = timeout;
  c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::TCPStore>(at.addr, opts);
  if (!at.prefix.empty()) store = c10::make_intrusive<c10d::PrefixStore>(at.prefix, store);
  return store;
}

struct Beat {
  StoreEndpoint at;
  int rank = 0;
  int size = 1;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  bool done = false;
};

void beat_loop(const std::shared_ptr<Beat>& b) {
  c10::intrusive_ptr<c10d::Store> store;
  std::unique_lock<std::mutex> lock(b->mu);
  while (!b->stop) {
    lock.unlock();
    try {
      if (!store) store = open_client(b->at, std::chrono::milliseconds(1000));
      store->add(alive_key(b->rank), 1);
    } catch (const std::exception&) {
      store.reset();  // reconnect at the next beat
    }
    lock.lock();
    b->cv.wait_for(lock, kBeat, [&] { return b->stop; });
  }
  lock.unlock();
  try {
    if (store) store->set(gone_key(b->rank), kOne);
  } catch (const std::exception&) {
  }
  store.reset();  // closed before the program may go on to exit
  lock.lock();
  b->done = true;
  b->cv.notify_all();
}

// The one heartbeat of this process; stopped when the program exits.
struct Heart {
  std::mutex mu;
  std::shared_ptr<Beat> beat;
  std::shared_ptr<void> keep;  // the hosted store: outlives the beat's connection

  bool stop() {
    std::shared_ptr<Beat> b;
    std::shared_ptr<void> k;
    {
      std::lock_guard<std::mutex> g(mu);
      b.swap(beat);
      k.swap(keep);
    }
    if (!b) return true;
    std::unique_lock<std::mutex> lock(b->mu);
    b->stop = true;
    b->cv.notify_all();
    // A request in flight and the final "gone" mark are each bounded by the
    // 1 s store timeout (a connect to a store that went away retries for it).
    const bool done = b->cv.wait_for(lock, std::chrono::milliseconds(3000), [&] { return b->done; });
    if (!done) new std::shared_ptr<void>(std::move(k));  // never torn down under the thread
    return done;
  }
  ~Heart() { stop(); }
};

Heart& heart() {
  static Heart h;
  return h;
}

std::string claim_of(c10d::Store& store, int rank) {
  const auto key = fmt::format("dtbench/job/rank/{}", rank);
  try {
    if (!store.check({key})) return "";
    const auto b = store.get(key);
    std::string s(b.begin(), b.end());
    return s.substr(0, s.find(" (world size"));
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

std::vector<int> stalled(const std::vector<std::int64_t>& before, const std::vector<std::int64_t>& after,
                         int self) {
  std::vector<int> out;
  for (std::size_t r = 0; r < before.size() && r < after.size(); ++r)
    if (static_cast<int>(r) != self && after[r] == before[r]) out.push_back(static_cast<int>(r));
  return out;
}

void start_heartbeat(const StoreEndpoint& at, int rank, int world_size, std::shared_ptr<void> keep) {
  auto& h = heart();
  h.stop();
  auto b = std::make_shared<Beat>();
  b->at = at;
  b->rank = rank;
  b->size = world_size;
  std::thread(beat_loop, b).detach();
  std::lock_guard<std::mutex> g(h.mu);
  h.beat = b;
  h.keep = std::move(keep);
}

bool stop_heartbeat() { return heart().stop(); }

std::string silent_ranks(std::chrono::milliseconds window) {
  std::shared_ptr<Beat> b;
  {
    std::lock_guard<std::mutex> g(heart().mu);
    b = heart().beat;
  }
  if (!b || b->size < 2) return "";
  const double seconds = window.count() / 1000.0;
  c10::intrusive_ptr<c10d::Store> store;
  std::vector<std::int64_t> before(b->size), after(b->size);
  try {
    store = open_client(b->at, window);
    store->set(gone_key(b->rank), kOne);  // this rank is failing: its own silence is no news
    for (int r = 0; r < b->size; ++r) before[r] = store->add(alive_key(r), 0);
  } catch (const std::exception&) {
    if (b->at.hosted_by_rank0 && b->rank != 0)
      return fmt::format("the job's store at {}:{}, hosted by rank 0, did not answer within {:.1f} s: rank 0 "
                         "is stopped, hung or dead, or its host is unreachable",
                         b->at.addr, b->at.port, seconds);
    return fmt::format("the job's store at {}:{} did not answer within {:.1f} s", b->at.addr, b->at.port,
                       seconds);
  }
  std::this_thread::sleep_for(window);
  try {
    for (int r = 0; r < b->size; ++r) after[r] = store->add(alive_key(r), 0);
  } catch (const std::exception&) {
    return "";
  }
  std::vector<int> silent;
  try {
    for (const int r : stalled(before, after, b->rank))
      if (!store->check({gone_key(r)})) silent.push_back(r);
  } catch (const std::exception&) {
    return "";
  }
  if (silent.empty()) return "";
  std::string names;
  for (std::size_t i = 0; i < silent.size(); ++i) {
    if (i == 4) {
      names += fmt::format(" and {} more", silent.size() - 4);
      break;
    }
    const auto claim = claim_of(*store, silent[i]);
    names += fmt::format("{}rank {}{}", i == 0 ? "" : ", ", silent[i], claim.empty() ? "" : " (" + claim + ")");
  }
  return fmt::format("{} sent no heartbeat for {:.1f} s: {} stopped, hung or dead", names, seconds,
                     silent.size() == 1 ? "it is" : "they are");
}

}  // namespace dtbench::comm
