#pragma once
// `dtbench kvstore` options, roles, wire operations and the exactly known
// values every mode is checked against (pure, torch-free).
//
// Values are small integers (exact in float32 whatever the order of the
// sums), periodic in the element index, so expected results are tables:
//   pushed by worker w, replica r, round i, element j:  1 + (j + 3w + 5r + 7i) mod 8
//   initial server weight (--optimizer sgd):            j mod 16
// sgd applies  weight -= lr * sum  with lr a power of two (exact).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/kvstore/layout.h"
#include "rpc/transport.h"

namespace dtbench::bench::kv {

enum class KvMode { kLocal, kDevice, kDistSync, kDistAsync, kDistDeviceSync };
KvMode parse_mode(const std::string& s);  // throws UsageError
std::string to_string(KvMode m);
bool is_dist(KvMode m);
bool is_sync(KvMode m);  // every mode but dist_async

struct KvOptions {
  KvMode mode = KvMode::kDistSync;
  int workers = 1;
  int servers = 1;   // dist modes only
  int replicas = 1;  // per worker (stand-ins for GPUs)
  std::string array_source = "resnet50";  // model name, or "uniform"
  std::vector<KvArray> arrays;
  std::size_t bigarray_bound = 1000000;
  bool sgd = false;   // --optimizer sgd: servers update weights
  float lr = 0.5f;    // power of two keeps sgd exact
  int iters = 10;
  int warmup = 1;
  bool check = true;
  int ceiling_iters = 5;  // raw TensorPipe rounds (0 = skip)
  // Sync dist modes: a worker's last push of a key carries the pull (one
  // request per key, its reply the round's result, like MXNet's PushPull);
  // true: every push acknowledged, then a separate pull per key.
  bool separate_pull = false;
  // Where the replicas live: "cpu" (host vectors), or "cuda" (tensors on the
  // GPU of the worker's LOCAL_RANK; local and device modes only).
  std::string device = "cpu";
  rpc::TransportOptions transport;
};

// Throws UsageError on inconsistent options (servers with local/device, …).
void validate(const KvOptions& o);

// Ranks 0..workers-1 are workers, the next `servers` ranks servers.
inline bool is_server_rank(const KvOptions& o, int rank) { return rank >= o.workers; }
inline int world_size_for(const KvOptions& o) { return o.workers + (is_dist(o.mode) ? o.servers : 0); }

// Pushes per key per round from one worker: the replicas, or one after a
// local reduction (dist_device_sync).
int pushes_per_worker(const KvOptions& o);

// Bytes one worker moves per iteration (docs/metrics.md, "kvstore").
double bytes_per_worker(const KvOptions& o, std::size_t total_numel);

// Wire operations (rpc::Header::op).
enum KvOp : std::uint32_t {
  kPush = 1,        // key; arg0 round, arg1 push slot; part: the slice
  kPull = 2,        // key; arg0 round; reply part: the round's result
  kPullLatest = 3,  // key; reply: the current value; reply arg0 = pushes applied
  kBye = 4,         // worker done
  kPushPull = 5,    // sync modes: a push (as kPush) whose reply is the round's result (as kPull)
};

inline float push_value(int worker, int replica, std::int64_t round, std::size_t j) {
  return static_cast<float>(1 + (j + 3 * worker + 5 * replica + 7 * round) % 8);
}
inline float init_weight(std::size_t j) { return static_cast<float>(j % 16); }

// Period-16 table of what a sync pull of `round` must return (sum of every
// push of that round, or the sgd weight after it).
std::vector<float> expected_sync(const KvOptions& o, std::int64_t round);
// Period-16 table of the final value after `rounds` rounds of every worker
// (dist_async's end check).
std::vector<float> expected_final(const KvOptions& o, std::int64_t rounds);
// Period-16 table of what local/device modes produce on worker `w`'s
// replicas (device: summed over all workers).
std::vector<float> expected_local(const KvOptions& o, int worker, std::int64_t round);

}  // namespace dtbench::bench::kv
