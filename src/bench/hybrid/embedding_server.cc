#include "bench/hybrid/embedding_server.h"

#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::bench::hybrid {

EmbeddingServer::EmbeddingServer(const HybridOptions& opts, int index, rpc::Server& server)
    : opts_(opts), index_(index), server_(server),
      table_(opts.num_embeddings, opts.embedding_dim, opts.trainers, opts.lr, opts.check) {
  table_.reserve_log(static_cast<std::int64_t>(opts.warmup + opts.epochs) * opts.batches);
}

bool EmbeddingServer::handle_inline(const rpc::Header& h) const {
  return h.op == kLookup || h.op == kBackward || h.op == kStep;
}

int EmbeddingServer::trainer_of(const rpc::Header& h) const {
  const int t = static_cast<int>(h.from) - 1;
  if (t < 0 || t >= opts_.trainers)
    throw CommError(fmt::format("hybrid server {}: rank {} is not a trainer", index_, h.from));
  return t;
}

EmbeddingServer::Scratch& EmbeddingServer::inbox(std::uint32_t from, std::uint32_t op) {
  std::lock_guard<std::mutex> lock(scratch_mu_);
  return in_[{from, op}];
}

std::vector<rpc::Buffer> EmbeddingServer::receive_into(const rpc::Header& h,
                                                       const std::vector<std::size_t>& lengths) {
  if (h.op != kLookup && h.op != kBackward) return {};
  const std::size_t want_parts = h.op == kLookup ? 2 : 3;
  if (lengths.size() != want_parts || lengths[0] % sizeof(std::int64_t) != 0 ||
      lengths[1] % sizeof(std::int64_t) != 0)
    throw CommError(fmt::format("hybrid server {}: malformed request", index_));
  const std::size_t bags = lengths[1] / sizeof(std::int64_t);
  if (h.op == kBackward && lengths[2] != bags * opts_.embedding_dim * sizeof(float))
    throw CommError(fmt::format("hybrid server {}: the gradients are not one row per bag", index_));
  auto& s = inbox(h.from, h.op);
  s.indices.resize(lengths[0] / sizeof(std::int64_t));
  s.offsets.resize(bags);
  std::vector<rpc::Buffer> out{{s.indices.data(), lengths[0]}, {s.offsets.data(), lengths[1]}};
  if (h.op == kBackward) {
    s.values.resize(bags * opts_.embedding_dim);
    out.push_back({s.values.data(), lengths[2]});
  }
  return out;
}

void EmbeddingServer::handle(rpc::Request req) {
  const auto& h = req.header;
  try {
    switch (h.op) {
      case kInit: {
        std::lock_guard<std::mutex> lock(table_mu_);
        table_.init(opts_.seed, index_);
        initialized_ = true;
        return server_.reply(req.peer, h, {});
      }
      case kLookup: {
        const int t = trainer_of(h);
        auto& in = inbox(h.from, h.op);
        std::vector<float>* outp;
        {
          std::lock_guard<std::mutex> lock(scratch_mu_);
          outp = &out_[h.from];  // this sender's next lookup waits for this reply
        }
        outp->resize(in.offsets.size() * opts_.embedding_dim);
        {
          std::lock_guard<std::mutex> lock(table_mu_);
          if (!initialized_) throw CommError(fmt::format("hybrid server {}: table not created yet", index_));
          table_.lookup(t, h.arg0, in.indices.data(), in.indices.size(), in.offsets.data(), in.offsets.size(),
                        outp->data());
        }
        return server_.reply(req.peer, h, {{outp->data(), outp->size() * sizeof(float)}});
      }
      case kBackward: {
        const int t = trainer_of(h);
        auto& in = inbox(h.from, h.op);
        {
          std::lock_guard<std::mutex> lock(table_mu_);
          table_.backward(t, h.arg0, in.indices.data(), in.indices.size(), in.offsets.data(),
                          in.offsets.size(), in.values.data());
        }
        return server_.reply(req.peer, h, {});
      }
      case kStep: {
        const int t = trainer_of(h);
        {
          std::lock_guard<std::mutex> lock(table_mu_);
          table_.step(t, h.arg0);
        }
        return server_.reply(req.peer, h, {});
      }
      case kDump: {  // the trainers have finished: nothing waits on the lock
        std::lock_guard<std::mutex> lock(table_mu_);
        const auto& w = table_.weight();
        return server_.reply(req.peer, h, {{const_cast<float*>(w.data()), w.size() * sizeof(float)}});
      }
      case kLogSize: {
        std::lock_guard<std::mutex> lock(table_mu_);
        log_size_ = table_.log().size();
        return server_.reply(req.peer, h, {{&log_size_, sizeof log_size_}});
      }
      case kLog: {
        std::lock_guard<std::mutex> lock(table_mu_);
        const auto& l = table_.log();
        return server_.reply(req.peer, h, {{const_cast<char*>(l.data()), l.size()}});
      }
      case kBye:  // the server ends once every peer said bye and closed its pipe
        said_bye_[req.peer] = true;
        return server_.reply(req.peer, h, {});
      default:
        server_.reply_error(req.peer, h, fmt::format("hybrid server {}: unknown operation {}", index_, h.op));
    }
  } catch (const std::invalid_argument& e) {  // bad bags or trainer: the requester hears why
    server_.reply_error(req.peer, h, fmt::format("hybrid server {}: {}", index_, e.what()));
  }
}

void EmbeddingServer::disconnected(std::uint32_t peer, const std::string& why) {
  // Ending at the last bye instead would close pipes whose bye reply was
  // still unsent: the peer saw "closed the connection" (1 run in ~15).
  if (said_bye_.count(peer)) {
    if (++byes_ == 1 + opts_.trainers) server_.finish();
    return;
  }
  server_.finish(fmt::format("hybrid server {}: a trainer or the master disconnected before "
                             "finishing ({})",
                             index_, why));
}

}  // namespace dtbench::bench::hybrid
