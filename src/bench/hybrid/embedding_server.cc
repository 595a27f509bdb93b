#include "bench/hybrid/embedding_server.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::bench::hybrid {

EmbeddingServer::EmbeddingServer(const HybridOptions& opts, int index, rpc::Server& server)
    : opts_(opts), index_(index), server_(server), local_rows_(rows_on(opts, index)) {
  tables_.assign(opts_.tables, std::vector<float>(static_cast<std::size_t>(local_rows_) * opts_.embedding_dim));
}

bool EmbeddingServer::handle_inline(const rpc::Header& h) const {
  return h.op == kLookup || h.op == kUpdate;
}

// Callers hold tables_mu_.
std::vector<float>& EmbeddingServer::table(std::uint64_t t) {
  if (t >= tables_.size())
    throw CommError(fmt::format("hybrid server {}: no table {}", index_, t));
  if (!initialized_) throw CommError(fmt::format("hybrid server {}: tables not created yet", index_));
  return tables_[t];
}

EmbeddingServer::Scratch& EmbeddingServer::inbox(const rpc::Header& h) {
  std::lock_guard<std::mutex> lock(scratch_mu_);
  return in_[{h.from, h.op * 65536 + h.key}];
}

std::vector<rpc::Buffer> EmbeddingServer::receive_into(const rpc::Header& h,
                                                       const std::vector<std::size_t>& lengths) {
  if (h.op != kLookup && h.op != kUpdate) return {};
  const std::size_t want_parts = h.op == kLookup ? 1 : 2;
  if (lengths.size() != want_parts || lengths[0] % sizeof(std::int64_t) != 0)
    throw CommError(fmt::format("hybrid server {}: malformed request", index_));
  const std::size_t n = lengths[0] / sizeof(std::int64_t);
  if (h.op == kUpdate && lengths[1] != n * opts_.embedding_dim * sizeof(float))
    throw CommError(fmt::format("hybrid server {}: update gradients have the wrong size", index_));
  auto& s = inbox(h);
  s.rows.resize(n);
  std::vector<rpc::Buffer> out{{s.rows.data(), lengths[0]}};
  if (h.op == kUpdate) {
    s.values.resize(n * opts_.embedding_dim);
    out.push_back({s.values.data(), lengths[1]});
  }
  return out;
}

void EmbeddingServer::check_rows(const std::vector<std::int64_t>& rows, std::size_t n) const {
  for (std::size_t i = 0; i < n; ++i)
    if (rows[i] < 0 || rows[i] >= opts_.num_embeddings || server_of_row(opts_, rows[i]) != index_)
      throw CommError(fmt::format("hybrid server {}: row {} is not held here", index_, rows[i]));
}

void EmbeddingServer::handle(rpc::Request req) {
  const auto& h = req.header;
  const std::size_t dim = static_cast<std::size_t>(opts_.embedding_dim);
  switch (h.op) {
    case kInit: {
      std::lock_guard<std::mutex> lock(tables_mu_);
      for (int t = 0; t < opts_.tables; ++t)
        for (std::int64_t lr = 0; lr < local_rows_; ++lr)
          for (std::size_t c = 0; c < dim; ++c)
            tables_[t][lr * dim + c] =
                initial_value(opts_.seed, t, lr * opts_.servers + index_, static_cast<int>(c));
      initialized_ = true;
      return server_.reply(req.peer, h, {});
    }
    case kLookup: {
      const Scratch* in = &inbox(h);
      const std::size_t n = req.parts[0].bytes / sizeof(std::int64_t);
      check_rows(in->rows, n);
      std::vector<float>* outp;
      {
        std::lock_guard<std::mutex> lock(scratch_mu_);
        outp = &out_[{h.from, h.key}].values;  // this sender's next lookup waits for the reply
      }
      auto& out = *outp;
      out.resize(n * dim);
      {
        std::lock_guard<std::mutex> lock(tables_mu_);
        auto& tab = table(h.key);
        for (std::size_t i = 0; i < n; ++i)
          std::copy_n(&tab[local_row(opts_, in->rows[i]) * dim], dim, &out[i * dim]);
      }
      ++lookups_;
      return server_.reply(req.peer, h, {{out.data(), out.size() * sizeof(float)}});
    }
    case kUpdate: {
      const Scratch* in = &inbox(h);
      const std::size_t n = req.parts[0].bytes / sizeof(std::int64_t);
      check_rows(in->rows, n);
      {
        std::lock_guard<std::mutex> lock(tables_mu_);
        auto& tab = table(h.key);
        for (std::size_t i = 0; i < n; ++i) {
          float* row = &tab[local_row(opts_, in->rows[i]) * dim];
          const float* g = &in->values[i * dim];
          for (std::size_t c = 0; c < dim; ++c) row[c] -= opts_.lr * g[c];
        }
      }
      ++updates_;
      return server_.reply(req.peer, h, {});
    }
    case kDump: {
      std::lock_guard<std::mutex> lock(tables_mu_);  // the trainers have finished: nothing waits
      auto& tab = table(h.key);
      return server_.reply(req.peer, h, {{tab.data(), tab.size() * sizeof(float)}});
    }
    case kBye:  // the server ends once every peer said bye and closed its pipe
      said_bye_[req.peer] = true;
      return server_.reply(req.peer, h, {});
    default:
      server_.reply_error(req.peer, h, fmt::format("hybrid server {}: unknown operation {}", index_, h.op));
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
