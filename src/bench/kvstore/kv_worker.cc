#include "bench/kvstore/kv_worker.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::bench::kv {
namespace {
using Clock = std::chrono::steady_clock;
}

KvWorker::KvWorker(const KvOptions& opts, const KvLayout& layout, int worker)
    : opts_(opts), layout_(layout), worker_(worker) {
  replicas_.assign(opts_.replicas, std::vector<float>(layout_.total_numel));
  marks_.resize(layout_.total_numel);
  for (std::size_t j = 0; j < marks_.size(); ++j) marks_[j] = static_cast<std::uint8_t>(element_mark(j));
}

void KvWorker::fill(std::int64_t round) {
  float mark[4];
  for (int m = 0; m < 4; ++m) mark[m] = 8.0f * static_cast<float>(round_mark(m, round));
  for (int r = 0; r < opts_.replicas; ++r) {
    float table[8];
    for (std::size_t j = 0; j < 8; ++j) table[j] = push_base(worker_, r, round, j);
    auto& v = replicas_[r];
    for (std::size_t j = 0; j < v.size(); ++j) v[j] = table[j & 7] + mark[marks_[j]];
  }
}

// Every replica against the exact values (not against replica 0: a copy
// that missed a region shows).
KvErrors KvWorker::check(const KvExpected& want) const {
  KvErrors e;
  const std::size_t n = layout_.total_numel;
  for (std::size_t j = 0; j < n; ++j) {
    const double w = want.at(j, marks_[j]);
    e.want_sum += std::fabs(w);
    for (int r = 0; r < opts_.replicas; ++r) {
      const double d = std::fabs(static_cast<double>(replicas_[r][j]) - w);
      e.abs_sum += d;
      e.max_abs = std::max(e.max_abs, d);
    }
  }
  return e;
}

void KvWorker::reduce_replicas() {
  auto& dst = replicas_[0];
  for (int r = 1; r < opts_.replicas; ++r) {
    const float* src = replicas_[r].data();
    for (std::size_t j = 0; j < dst.size(); ++j) dst[j] += src[j];
  }
}

void KvWorker::copy_to_replicas() {
  for (int r = 1; r < opts_.replicas; ++r)
    std::memcpy(replicas_[r].data(), replicas_[0].data(), replicas_[0].size() * sizeof(float));
}

void KvWorker::dist_round(std::int64_t round, KvIteration& it) {
  const int slots = pushes_per_worker(opts_);
  // Sync modes by default: the last push of each key is a push-pull, its
  // reply the round's result into replica 0 (the server answers only once
  // every push of the round is in, so every push's bytes have left first).
  const bool pushpull = is_sync(opts_.mode) && !opts_.separate_pull;
  std::vector<std::shared_ptr<rpc::Call>> calls;
  calls.reserve(layout_.keys.size() * (slots + 1));
  for (std::size_t id = 0; id < layout_.keys.size(); ++id) {
    const auto& k = layout_.keys[id];
    const std::size_t off = layout_.array_offset[k.array] + k.offset;
    for (int s = 0; s < slots; ++s) {
      rpc::Header h;
      h.op = pushpull && s == slots - 1 ? kPushPull : kPush;
      h.key = id;
      h.arg0 = round;
      h.arg1 = s;
      std::vector<rpc::Buffer> into;
      if (h.op == kPushPull) into = {{replicas_[0].data() + off, k.numel * sizeof(float)}};
      calls.push_back(servers_[k.server]->call(
          h, {{replicas_[s].data() + off, k.numel * sizeof(float)}}, std::move(into)));
    }
  }
  const std::size_t first_pull = calls.size();
  for (std::size_t id = 0; id < layout_.keys.size() && !pushpull; ++id) {
    const auto& k = layout_.keys[id];
    const std::size_t off = layout_.array_offset[k.array] + k.offset;
    rpc::Header h;
    h.op = kPull;
    h.key = id;
    h.arg0 = round;
    calls.push_back(servers_[k.server]->call(h, {}, {{replicas_[0].data() + off, k.numel * sizeof(float)}}));
  }
  // dist_async: how far each pulled key is from lockstep (see docs/metrics.md).
  const double per_round = static_cast<double>(opts_.workers) * slots;
  double stale = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto reply = calls[i]->wait();
    if (i >= first_pull && !is_sync(opts_.mode)) {
      const double lockstep = per_round * static_cast<double>(round + 1);
      const double s = (lockstep - static_cast<double>(reply.arg0)) / slots;
      if (std::fabs(s) > std::fabs(stale)) stale = s;
    }
  }
  if (!is_sync(opts_.mode)) it.staleness = stale;
}

KvIteration KvWorker::run(std::int64_t round) {
  fill(round);
  if (round_start_) round_start_(round);
  KvIteration it;
  const auto t0 = Clock::now();
  switch (opts_.mode) {
    case KvMode::kLocal:
      reduce_replicas();
      break;
    case KvMode::kDevice: {
      reduce_replicas();
      std::vector<std::pair<float*, std::size_t>> regions;
      for (std::size_t a = 0; a < layout_.arrays.size(); ++a)
        regions.emplace_back(replicas_[0].data() + layout_.array_offset[a], layout_.arrays[a].numel);
      allreduce_(regions);
      break;
    }
    case KvMode::kDistDeviceSync:
      reduce_replicas();
      dist_round(round, it);
      break;
    case KvMode::kDistSync:
    case KvMode::kDistAsync:
      dist_round(round, it);
      break;
  }
  copy_to_replicas();
  it.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  it.gbps = bytes_per_worker(opts_, layout_.total_numel) / it.seconds / 1e9;
  it.gbps_per_gpu = measure_py_bytes(opts_, layout_.total_numel) / it.seconds / 1e9;
  if (opts_.check && is_sync(opts_.mode)) {
    const auto e = check(is_dist(opts_.mode) ? expected_sync(opts_, round)
                                             : expected_local(opts_, worker_, round));
    it.error = e.max_abs;
    it.rel_l1_error = e.rel_l1();
  }
  return it;
}

double KvWorker::final_error(std::int64_t rounds) {
  std::vector<std::shared_ptr<rpc::Call>> calls;
  for (std::size_t id = 0; id < layout_.keys.size(); ++id) {
    const auto& k = layout_.keys[id];
    rpc::Header h;
    h.op = kPullLatest;
    h.key = id;
    calls.push_back(servers_[k.server]->call(
        h, {}, {{replicas_[0].data() + layout_.array_offset[k.array] + k.offset, k.numel * sizeof(float)}}));
  }
  const double pushes = static_cast<double>(rounds) * opts_.workers * pushes_per_worker(opts_);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto reply = calls[i]->wait();
    if (static_cast<double>(reply.arg0) != pushes)
      throw VerificationError(fmt::format("kvstore: key {} applied {} pushes, expected {}", i,
                                          reply.arg0, pushes));
  }
  const auto want = expected_final(opts_, rounds);
  double err = 0;
  for (std::size_t j = 0; j < replicas_[0].size(); ++j)
    err = std::max(err, static_cast<double>(std::fabs(replicas_[0][j] - want.at(j, marks_[j]))));
  return err;
}

void KvWorker::bye() {
  for (auto* c : servers_) {
    rpc::Header h;
    h.op = kBye;
    c->request(h);
  }
}

}  // namespace dtbench::bench::kv
