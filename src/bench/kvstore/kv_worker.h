#pragma once
// The kvstore worker role (torch-free): one iteration of each mode on
// `replicas` flat float32 buffers laid out as KvLayout says.
//   local             replicas summed in host memory, copied back
//   device            replicas summed, then allreduced across workers by the
//                     `Allreduce` callback (the communicator), copied back
//   dist_sync/async   every replica pushed to the key's server, result pulled
//   dist_device_sync  replicas summed locally first, one push per key
// Every request of an iteration is in flight at once; the iteration ends
// when all replies are in. Data are refilled (untimed) before each round and
// every replica's result is checked (untimed) against the exact values of
// kv_config.h;
// an optional hook runs between the refill and the clock's start (the
// benchmark's barrier, so that no worker's untimed refill or check runs
// inside another worker's timed round).
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "bench/kvstore/kv_config.h"
#include "report/kvstore_record.h"
#include "rpc/node.h"

namespace dtbench::bench::kv {

using report::KvIteration;

// Sums each (pointer, count) region in place across the workers.
using Allreduce = std::function<void(const std::vector<std::pair<float*, std::size_t>>&)>;

class KvWorker {
 public:
  KvWorker(const KvOptions& opts, const KvLayout& layout, int worker);

  // dist modes: the clients, indexed by server.
  void set_servers(std::vector<rpc::Client*> servers) { servers_ = std::move(servers); }
  void set_allreduce(Allreduce fn) { allreduce_ = std::move(fn); }
  void set_round_start(std::function<void(std::int64_t round)> fn) { round_start_ = std::move(fn); }

  // Runs round `round` (warm-up rounds included in the numbering).
  KvIteration run(std::int64_t round);

  // dist_async, after every worker finished `rounds` rounds: max error of
  // the servers' final values against the exact total.
  double final_error(std::int64_t rounds);

  // Tells every server this worker is done.
  void bye();

 private:
  void fill(std::int64_t round);
  KvErrors check(const KvExpected& want) const;
  void reduce_replicas();
  void copy_to_replicas();
  void dist_round(std::int64_t round, KvIteration& it);

  KvOptions opts_;
  KvLayout layout_;
  int worker_;
  std::vector<std::vector<float>> replicas_;
  std::vector<std::uint8_t> marks_;  // element_mark of every element
  std::vector<rpc::Client*> servers_;
  Allreduce allreduce_;
  std::function<void(std::int64_t)> round_start_;
};

}  // namespace dtbench::bench::kv
