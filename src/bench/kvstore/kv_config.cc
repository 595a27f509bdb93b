#include "bench/kvstore/kv_config.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::bench::kv {

KvMode parse_mode(const std::string& s) {
  if (s == "local") return KvMode::kLocal;
  if (s == "device") return KvMode::kDevice;
  if (s == "dist_sync") return KvMode::kDistSync;
  if (s == "dist_async") return KvMode::kDistAsync;
  if (s == "dist_device_sync") return KvMode::kDistDeviceSync;
  throw UsageError(fmt::format(
      "--mode '{}' must be local, device, dist_sync, dist_async or dist_device_sync", s));
}

std::string to_string(KvMode m) {
  switch (m) {
    case KvMode::kLocal: return "local";
    case KvMode::kDevice: return "device";
    case KvMode::kDistSync: return "dist_sync";
    case KvMode::kDistAsync: return "dist_async";
    case KvMode::kDistDeviceSync: return "dist_device_sync";
  }
  return "?";
}

bool is_dist(KvMode m) { return m != KvMode::kLocal && m != KvMode::kDevice; }
bool is_sync(KvMode m) { return m != KvMode::kDistAsync; }

void validate(const KvOptions& o) {
  if (o.workers < 1) throw UsageError(fmt::format("--workers {} must be at least 1", o.workers));
  if (o.replicas < 1) throw UsageError(fmt::format("--replicas {} must be at least 1", o.replicas));
  if (o.iters < 1) throw UsageError(fmt::format("--iters {} must be at least 1", o.iters));
  if (o.warmup < 0) throw UsageError(fmt::format("--warmup {} must be at least 0", o.warmup));
  if (is_dist(o.mode) && o.servers < 1)
    throw UsageError(fmt::format("--mode {} needs --servers 1 or more", to_string(o.mode)));
  if (o.sgd && !is_dist(o.mode))
    throw UsageError("--optimizer sgd runs on the servers: it needs a dist_* mode");
  if (o.arrays.empty()) throw UsageError("kvstore: no arrays");
  if (o.separate_pull && !(is_dist(o.mode) && is_sync(o.mode)))
    throw UsageError(fmt::format("--separate-pull applies to dist_sync and dist_device_sync (--mode {} {})",
                                 to_string(o.mode),
                                 is_dist(o.mode) ? "always pulls separately" : "has no servers"));
  if (o.device != "cpu" && o.device != "cuda")
    throw UsageError(fmt::format("--device '{}' must be cpu or cuda", o.device));
  if (o.device == "cuda" && is_dist(o.mode))
    throw UsageError(fmt::format(
        "--device cuda: --mode {} pushes host buffers over TensorPipe; the GPU modes are local "
        "(replicas reduced in host memory) and device (reduced on the GPU)",
        to_string(o.mode)));
  // Sums stay exact integers in float32 only while below 2^24 (a push is at
  // most 8 + 8 x 3).
  const double per_round = 32.0 * o.workers * o.replicas;
  const double rounds = static_cast<double>(o.iters + o.warmup);
  if (per_round * rounds * (o.sgd ? o.lr : 1.0) + 16 > (1 << 23))
    throw UsageError("kvstore: --iters x --workers x --replicas too large for exact checking");
  // measure.py's local and device kvstores reduce the devices of one
  // process (and, device, across workers): with nothing to reduce a round
  // moves no byte and its time and bandwidth mean nothing.
  if (o.mode == KvMode::kLocal && o.replicas < 2)
    throw UsageError("--mode local sums a worker's replicas: --replicas 1 leaves nothing to reduce (use 2 or more)");
  if (o.mode == KvMode::kDevice && o.replicas < 2 && o.workers < 2)
    throw UsageError("--mode device with 1 worker and --replicas 1 has nothing to reduce (use --replicas 2 or more)");
}

int pushes_per_worker(const KvOptions& o) {
  return o.mode == KvMode::kDistDeviceSync ? 1 : o.replicas;
}

double bytes_per_worker(const KvOptions& o, std::size_t total_numel) {
  const double s = 4.0 * static_cast<double>(total_numel);
  switch (o.mode) {
    case KvMode::kLocal: return 2.0 * o.replicas * s;
    case KvMode::kDevice:  // the replicas' sum (as local), then the allreduce's bus bytes
      return (o.replicas > 1 ? 2.0 * o.replicas * s : 0.0) +
             (o.workers > 1 ? 2.0 * s * (o.workers - 1) / o.workers : 0.0);
    case KvMode::kDistSync:
    case KvMode::kDistAsync: return (pushes_per_worker(o) + 1) * s;
    case KvMode::kDistDeviceSync: return 2.0 * s;
  }
  return 0;
}

std::int64_t mark_sum(int element, std::int64_t rounds) {
  std::int64_t s = (rounds / 4) * 6;  // 0 + 1 + 2 + 3 per full cycle
  for (std::int64_t i = 0; i < rounds % 4; ++i) s += round_mark(element, i);
  return s;
}

double measure_py_bytes(const KvOptions& o, std::size_t total_numel) {
  const double n = o.replicas;
  return 4.0 * static_cast<double>(total_numel) * 2.0 * (n - 1) / n;
}

namespace {

// Sum over every worker and replica of one round's pushes' period-8 part,
// per j mod 16.
std::vector<float> round_sum(const KvOptions& o, std::int64_t round, int only_worker) {
  std::vector<float> t(16, 0.0f);
  for (std::size_t j = 0; j < 16; ++j)
    for (int w = 0; w < o.workers; ++w) {
      if (only_worker >= 0 && w != only_worker) continue;
      for (int r = 0; r < o.replicas; ++r) t[j] += push_base(w, r, round, j);
    }
  return t;
}

// Pushes summed into one round's result.
double pushes(const KvOptions& o, bool one_worker) {
  return static_cast<double>(one_worker ? 1 : o.workers) * o.replicas;
}

}  // namespace

KvExpected expected_sync(const KvOptions& o, std::int64_t round) {
  KvExpected e;
  e.round = round;
  if (!o.sgd) {
    e.table = round_sum(o, round, -1);
    e.coef = 8.0 * pushes(o, false);
    return e;
  }
  e.table.resize(16);
  for (std::size_t j = 0; j < 16; ++j) e.table[j] = init_weight(j);
  for (std::int64_t i = 0; i <= round; ++i) {
    const auto s = round_sum(o, i, -1);
    for (std::size_t j = 0; j < 16; ++j) e.table[j] -= o.lr * s[j];
  }
  e.coef = -static_cast<double>(o.lr) * 8.0 * pushes(o, false);
  e.cumulative = true;
  e.rounds = round + 1;
  return e;
}

KvExpected expected_final(const KvOptions& o, std::int64_t rounds) {
  KvExpected e;
  e.table.assign(16, 0.0f);
  if (o.sgd)
    for (std::size_t j = 0; j < 16; ++j) e.table[j] = init_weight(j);
  for (std::int64_t i = 0; i < rounds; ++i) {
    const auto s = round_sum(o, i, -1);
    for (std::size_t j = 0; j < 16; ++j) e.table[j] += o.sgd ? -o.lr * s[j] : s[j];
  }
  e.coef = (o.sgd ? -static_cast<double>(o.lr) : 1.0) * 8.0 * pushes(o, false);
  e.cumulative = true;
  e.rounds = rounds;
  return e;
}

KvExpected expected_local(const KvOptions& o, int worker, std::int64_t round) {
  const bool one = o.mode != KvMode::kDevice;
  KvExpected e;
  e.table = round_sum(o, round, one ? worker : -1);
  e.coef = 8.0 * pushes(o, one);
  e.round = round;
  return e;
}

}  // namespace dtbench::bench::kv
