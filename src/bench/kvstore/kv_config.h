#pragma once
// `dtbench kvstore` options, roles, wire operations and the exactly known
// values every mode is checked against (pure, torch-free).
//
// Values are small integers (exact in float32 whatever the order of the
// sums). Pushed by worker w, replica r, round i, element j (the index in a
// worker's flat buffer):
//   1 + (j + 3w + 5r + 7i) mod 8  +  8 * mark(j, i)
//   mark(j, i) = (hash(j) + i) mod 4          (the same for every push)
// The first part sums to a period-16 table of j, which with 8 workers or
// replicas is one constant (every residue summed): on its own it cannot see
// a stale round, swapped keys or a misplaced slice. The mark can: it moves
// with the round and differs between elements, and every push of an element
// carries the same mark, so a sum of P pushes holds 8 P mark(j, i).
//   initial server weight (--optimizer sgd):            j mod 16
// sgd applies  weight -= lr * sum  with lr a power of two (exact).
#include <cmath>
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

// hash(j) mod 4: an element's own mark (a multiplicative hash, so keys and
// slices at any offsets differ in it).
inline int element_mark(std::size_t j) {
  std::uint32_t h = static_cast<std::uint32_t>(j) * 2654435761u;
  h ^= h >> 16;
  return static_cast<int>((h >> 5) & 3u);
}
inline int round_mark(int element, std::int64_t round) { return static_cast<int>((element + round) % 4); }
// The sum of round_mark(element, i) over rounds i = 0 .. rounds-1.
std::int64_t mark_sum(int element, std::int64_t rounds);

// The period-8 part of a push (see above).
inline float push_base(int worker, int replica, std::int64_t round, std::size_t j) {
  return static_cast<float>(1 + (j + 3 * worker + 5 * replica + 7 * round) % 8);
}
inline float push_value(int worker, int replica, std::int64_t round, std::size_t j) {
  return push_base(worker, replica, round, j) + 8.0f * static_cast<float>(round_mark(element_mark(j), round));
}
inline float init_weight(std::size_t j) { return static_cast<float>(j % 16); }

// What element j must hold: table[j mod 16] + coef x (this round's mark, or
// the sum of the marks of rounds 0 .. rounds-1 when cumulative).
struct KvExpected {
  std::vector<float> table;  // 16 entries
  double coef = 0;
  std::int64_t round = 0;
  bool cumulative = false;
  std::int64_t rounds = 0;
  float at(std::size_t j, int element) const {
    const double m = cumulative ? static_cast<double>(mark_sum(element, rounds))
                                : static_cast<double>(round_mark(element, round));
    return static_cast<float>(table[j & 15] + coef * m);
  }
  float at(std::size_t j) const { return at(j, element_mark(j)); }
};

// What a sync pull of `round` must return (sum of every push of that round,
// or the sgd weight after it).
KvExpected expected_sync(const KvOptions& o, std::int64_t round);
// The final value after `rounds` rounds of every worker (dist_async's end
// check).
KvExpected expected_final(const KvOptions& o, std::int64_t rounds);
// What local/device modes produce on worker `w`'s replicas (device: summed
// over all workers).
KvExpected expected_local(const KvOptions& o, int worker, std::int64_t round);

// The figures of a checked round, as MXNet's measure.py and dtbench define
// them: `rel_l1` = sum over every copy of |got - want| / sum of |want| (one
// copy: measure.py's error(), whose numerator adds every device's copy);
// `max_abs` = the largest |got - want| of any copy (dtbench's: must be 0).
struct KvErrors {
  double abs_sum = 0;   // numerator of rel_l1
  double want_sum = 0;  // denominator
  double max_abs = 0;
  double rel_l1() const { return want_sum > 0 ? abs_sum / want_sum : (abs_sum > 0 ? INFINITY : 0); }
};

// measure.py's bandwidth: size x 2 (n - 1) / n bytes per iteration and
// device, n = the devices (replicas) of one process, whatever the mode, the
// workers and the servers.
double measure_py_bytes(const KvOptions& o, std::size_t total_numel);

}  // namespace dtbench::bench::kv
