#pragma once
// A parameter server of `dtbench hybrid` (torch-free): its shard of every
// embedding table. Lookups return rows; updates apply row -= lr * grad as
// they arrive (asynchronous SGD, like the RPC benchmark's remote optimizer).
// Receive and reply buffers are kept per (sender, table) and reused.
// Lookups and updates are handled on the event loop (handle_inline): a few
// rows each, so the hop to the handler thread and back would cost more than
// the work; tables_mu_ orders them against each other and the handler thread.
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "bench/hybrid/hybrid_config.h"
#include "rpc/node.h"

namespace dtbench::bench::hybrid {

class EmbeddingServer : public rpc::Service {
 public:
  EmbeddingServer(const HybridOptions& opts, int index, rpc::Server& server);
  std::vector<rpc::Buffer> receive_into(const rpc::Header& h,
                                        const std::vector<std::size_t>& lengths) override;
  void handle(rpc::Request req) override;
  bool handle_inline(const rpc::Header& h) const override;
  void disconnected(std::uint32_t peer, const std::string& why) override;

  std::int64_t lookups() const { return lookups_; }
  std::int64_t updates() const { return updates_; }

 private:
  struct Scratch {
    std::vector<std::int64_t> rows;
    std::vector<float> values;
  };
  std::vector<float>& table(std::uint64_t t);
  // The reused receive buffers of one sender's requests of one kind and table.
  Scratch& inbox(const rpc::Header& h);
  void check_rows(const std::vector<std::int64_t>& rows, std::size_t n) const;

  HybridOptions opts_;
  int index_;
  rpc::Server& server_;
  std::int64_t local_rows_;
  std::mutex tables_mu_;                    // tables_, initialized_
  std::vector<std::vector<float>> tables_;  // [table][local_row * dim + c]
  bool initialized_ = false;
  std::mutex scratch_mu_;                   // the maps below (event-loop threads)
  std::map<std::pair<std::uint32_t, std::uint64_t>, Scratch> in_, out_;  // (from, op*65536+table)
  std::map<std::uint32_t, bool> said_bye_;  // handler thread only
  int byes_ = 0;
  std::atomic<std::int64_t> lookups_{0}, updates_{0};
};

}  // namespace dtbench::bench::hybrid
