#pragma once
// A parameter server of `dtbench hybrid` (torch-free): its shard of every
// embedding table. Lookups return rows; updates apply row -= lr * grad as
// they arrive (asynchronous SGD, like the RPC benchmark's remote optimizer).
// Receive and reply buffers are kept per (sender, table) and reused.
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
  std::vector<std::vector<float>> tables_;  // [table][local_row * dim + c]
  bool initialized_ = false;
  std::mutex scratch_mu_;                   // receive_into (event loop) vs nothing else
  std::map<std::pair<std::uint32_t, std::uint64_t>, Scratch> in_, out_;  // (from, op*65536+table)
  std::map<std::uint32_t, bool> said_bye_;
  int byes_ = 0;
  std::int64_t lookups_ = 0, updates_ = 0;
};

}  // namespace dtbench::bench::hybrid
