#pragma once
// The kvstore server role (torch-free): holds its share of the keys.
//   sync modes:  a key's round is summed (or applied by sgd) once every worker
//                pushed it; pulls that arrive early wait, without blocking,
//                until then. Results are double-buffered by round parity.
//   dist_async:  each push is applied as it arrives; pulls get a snapshot and
//                the number of pushes applied so far (for staleness).
// Receive buffers are allocated once per (key, worker, push slot) and reused.
// A worker that disconnects before saying goodbye ends the server with an
// error naming it; the server ends cleanly once every worker said goodbye
// and closed its pipe (not at the last goodbye: its reply must get out).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/kvstore/kv_config.h"
#include "rpc/node.h"

namespace dtbench::bench::kv {

struct KvServerStats {
  std::int64_t pushes = 0;
  std::int64_t pulls = 0;
  std::int64_t bytes_in = 0;
  std::int64_t bytes_out = 0;
  int keys = 0;
};

class KvServer : public rpc::Service {
 public:
  KvServer(const KvOptions& opts, const KvLayout& layout, int server_index, rpc::Server& server);

  std::vector<rpc::Buffer> receive_into(const rpc::Header& h,
                                        const std::vector<std::size_t>& lengths) override;
  void handle(rpc::Request req) override;
  void disconnected(std::uint32_t peer, const std::string& why) override;

  KvServerStats stats() const { return stats_; }

 private:
  struct PendingPull {
    std::uint32_t peer;
    rpc::Header header;
  };
  struct Key {
    std::size_t numel = 0;
    std::vector<std::vector<float>> inbox;  // [worker * slots + slot]
    std::vector<float> result[2];           // by round parity (async: [0] value)
    std::map<std::uint32_t, std::vector<float>> snapshots;  // async pulls, per peer
    std::int64_t finalized = -1;  // last round summed
    int received = 0;             // pushes of the round being collected
    std::int64_t version = 0;     // pushes applied (async)
    std::vector<PendingPull> waiting;
  };

  Key& key_for(const rpc::Header& h);
  void on_push(const rpc::Request& req);
  void on_pull(const rpc::Request& req);
  void finalize(Key& k, std::int64_t round);
  void answer(std::uint32_t peer, const rpc::Header& request, const float* data, std::size_t numel,
              std::int64_t arg0);

  KvOptions opts_;
  int index_;
  rpc::Server& server_;
  std::map<std::uint64_t, Key> keys_;  // built in the constructor, then fixed
  std::map<std::uint32_t, int> peer_worker_;
  std::map<std::uint32_t, bool> said_bye_;
  int byes_ = 0;
  KvServerStats stats_;
};

}  // namespace dtbench::bench::kv
