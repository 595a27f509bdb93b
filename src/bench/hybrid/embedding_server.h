#pragma once
// A parameter server of `dtbench hybrid` (torch-free): one EmbeddingTable
// served over dtbench's TensorPipe RPC. Receive and reply buffers are kept
// per sender and reused. Lookups, backwards and steps are handled on the
// event loop (handle_inline): small work, where the hop to the handler
// thread and back would cost more; table_mu_ orders them.
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "bench/hybrid/embedding_table.h"
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

 private:
  struct Scratch {
    std::vector<std::int64_t> indices, offsets;
    std::vector<float> values;
  };
  Scratch& inbox(std::uint32_t from, std::uint32_t op);
  int trainer_of(const rpc::Header& h) const;

  HybridOptions opts_;
  int index_;
  rpc::Server& server_;
  std::mutex table_mu_;  // table_, initialized_
  EmbeddingTable table_;
  bool initialized_ = false;
  std::uint64_t log_size_ = 0;
  std::mutex scratch_mu_;  // the maps below (event-loop threads)
  std::map<std::pair<std::uint32_t, std::uint32_t>, Scratch> in_;  // (from, op)
  std::map<std::uint32_t, std::vector<float>> out_;                 // lookup replies, per sender
  std::map<std::uint32_t, bool> said_bye_;  // handler thread only
  int byes_ = 0;
};

}  // namespace dtbench::bench::hybrid
