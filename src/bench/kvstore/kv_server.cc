#include "bench/kvstore/kv_server.h"

#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::bench::kv {

KvServer::KvServer(const KvOptions& opts, const KvLayout& layout, int server_index,
                   rpc::Server& server)
    : opts_(opts), index_(server_index), server_(server) {
  const int slots = pushes_per_worker(opts_);
  const bool async = !is_sync(opts_.mode);
  for (std::size_t id = 0; id < layout.keys.size(); ++id) {
    const auto& lk = layout.keys[id];
    if (lk.server != index_) continue;
    Key& k = keys_[id];
    k.numel = lk.numel;
    k.inbox.assign(static_cast<std::size_t>(opts_.workers) * slots, std::vector<float>(lk.numel));
    // Round -1 (slot 1) holds the initial value: zero, or the sgd weights.
    for (int p = 0; p < (async ? 1 : 2); ++p) k.result[p].assign(lk.numel, 0.0f);
    auto& init = k.result[async ? 0 : 1];
    if (opts_.sgd)
      for (std::size_t j = 0; j < lk.numel; ++j) init[j] = init_weight(lk.offset + j + layout.array_offset[lk.array]);
  }
  stats_.keys = static_cast<int>(keys_.size());
}

KvServer::Key& KvServer::key_for(const rpc::Header& h) {
  auto it = keys_.find(h.key);
  if (it == keys_.end())
    throw CommError(fmt::format("kvstore server {}: key {} is not held here", index_, h.key));
  return it->second;
}

// Event loop: where a push lands. Never blocks; the key map is fixed.
std::vector<rpc::Buffer> KvServer::receive_into(const rpc::Header& h,
                                                const std::vector<std::size_t>& lengths) {
  if (h.op != kPush && h.op != kPushPull) return {};
  Key& k = key_for(h);
  const int slots = pushes_per_worker(opts_);
  if (h.from >= static_cast<std::uint32_t>(opts_.workers) || h.arg1 < 0 || h.arg1 >= slots)
    throw CommError(fmt::format("kvstore server {}: push from worker {} slot {} is out of range",
                                index_, h.from, h.arg1));
  if (lengths.size() != 1 || lengths[0] != k.numel * sizeof(float))
    throw CommError(fmt::format("kvstore server {}: push to key {} has the wrong size", index_, h.key));
  auto& buf = k.inbox[static_cast<std::size_t>(h.from) * slots + h.arg1];
  return {{buf.data(), buf.size() * sizeof(float)}};
}

void KvServer::handle(rpc::Request req) {
  peer_worker_[req.peer] = static_cast<int>(req.header.from);
  switch (req.header.op) {
    case kPush:
    case kPushPull: return on_push(req);
    case kPull:
    case kPullLatest: return on_pull(req);
    case kBye:  // the server ends once every worker said bye and closed its pipe
      said_bye_[req.peer] = true;
      return server_.reply(req.peer, req.header, {});
    default:
      server_.reply_error(req.peer, req.header,
                          fmt::format("kvstore server {}: unknown operation {}", index_, req.header.op));
  }
}

void KvServer::on_push(const rpc::Request& req) {
  Key& k = key_for(req.header);
  ++stats_.pushes;
  stats_.bytes_in += static_cast<std::int64_t>(k.numel * sizeof(float));
  const bool pushpull = req.header.op == kPushPull;
  if (pushpull && !is_sync(opts_.mode))
    return server_.reply_error(req.peer, req.header,
                               fmt::format("kvstore server {}: push-pull in an async mode", index_));
  if (!pushpull) server_.reply(req.peer, req.header, {});  // ack: the bytes are here
  if (!is_sync(opts_.mode)) {
    const float* in = static_cast<const float*>(req.parts[0].data);
    float* v = k.result[0].data();
    if (opts_.sgd)
      for (std::size_t j = 0; j < k.numel; ++j) v[j] -= opts_.lr * in[j];
    else
      for (std::size_t j = 0; j < k.numel; ++j) v[j] += in[j];
    ++k.version;
    return;
  }
  const std::int64_t round = req.header.arg0;
  if (round != k.finalized + 1)
    throw CommError(fmt::format("kvstore server {}: worker {} pushed key {} for round {} while "
                                "round {} is being collected",
                                index_, req.header.from, req.header.key, round, k.finalized + 1));
  if (pushpull) {  // answered with the result, by finalize
    ++stats_.pulls;
    k.waiting.push_back({req.peer, req.header});
  }
  if (++k.received == static_cast<int>(k.inbox.size())) finalize(k, round);
}

void KvServer::finalize(Key& k, std::int64_t round) {
  // The first push becomes the sum's start by swapping buffers, not copying:
  // the buffer given up held round - 2, which every worker pulled before it
  // pushed round - 1 (a worker's pushes wait for its previous round's pulls),
  // so nothing still sends from it, and it takes worker 0's next push.
  std::swap(k.result[round & 1], k.inbox[0]);
  float* out = k.result[round & 1].data();
  const float* prev = k.result[(round + 1) & 1].data();
  // Sum in worker order: integers, so exact in any order anyway.
  for (std::size_t s = 1; s < k.inbox.size(); ++s) {
    const float* in = k.inbox[s].data();
    for (std::size_t j = 0; j < k.numel; ++j) out[j] += in[j];
  }
  if (opts_.sgd)
    for (std::size_t j = 0; j < k.numel; ++j) out[j] = prev[j] - opts_.lr * out[j];
  k.finalized = round;
  k.received = 0;
  auto waiting = std::move(k.waiting);
  k.waiting.clear();
  for (const auto& p : waiting) answer(p.peer, p.header, out, k.numel, round);
}

void KvServer::on_pull(const rpc::Request& req) {
  Key& k = key_for(req.header);
  ++stats_.pulls;
  if (!is_sync(opts_.mode) || req.header.op == kPullLatest) {
    // Snapshot: later pushes must not change bytes still being sent.
    auto& snap = k.snapshots[req.peer];
    const auto& src = is_sync(opts_.mode) ? k.result[k.finalized & 1] : k.result[0];
    snap.assign(src.begin(), src.end());
    return answer(req.peer, req.header, snap.data(), k.numel,
                  is_sync(opts_.mode) ? k.finalized : k.version);
  }
  const std::int64_t round = req.header.arg0;
  if (round == k.finalized) return answer(req.peer, req.header, k.result[round & 1].data(), k.numel, round);
  if (round == k.finalized + 1) {
    k.waiting.push_back({req.peer, req.header});
    return;
  }
  server_.reply_error(req.peer, req.header,
                      fmt::format("kvstore server {}: pull of key {} for round {}, but round {} is "
                                  "the latest",
                                  index_, req.header.key, round, k.finalized));
}

void KvServer::answer(std::uint32_t peer, const rpc::Header& request, const float* data,
                      std::size_t numel, std::int64_t arg0) {
  rpc::Header h = request;
  h.arg0 = arg0;
  stats_.bytes_out += static_cast<std::int64_t>(numel * sizeof(float));
  server_.reply(peer, h, {{const_cast<float*>(data), numel * sizeof(float)}});
}

void KvServer::disconnected(std::uint32_t peer, const std::string& why) {
  // Ending at the last bye instead would close pipes whose bye reply was
  // still unsent, and the worker saw "closed the connection".
  if (said_bye_.count(peer)) {
    if (++byes_ == opts_.workers) server_.finish();
    return;
  }
  auto it = peer_worker_.find(peer);
  const std::string who = it == peer_worker_.end() ? "a worker" : fmt::format("worker rank {}", it->second);
  server_.finish(fmt::format("kvstore server {}: {} disconnected before finishing ({})", index_,
                             who, why));
}

}  // namespace dtbench::bench::kv
