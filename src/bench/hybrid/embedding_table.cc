#include "bench/hybrid/embedding_table.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/hybrid/hybrid_config.h"

namespace dtbench::bench::hybrid {

EmbeddingTable::EmbeddingTable(std::int64_t rows, int dim, int trainers, float lr, bool keep_log)
    : rows_(rows), dim_(dim), lr_(lr), keep_log_(keep_log),
      weight_(static_cast<std::size_t>(rows) * dim),
      grads_(trainers, std::vector<float>(static_cast<std::size_t>(rows) * dim, 0.0f)) {}

void EmbeddingTable::reserve_log(std::int64_t batches) {
  if (!keep_log_) return;
  // Per batch: three event heads, the bags twice (lookup, backward), the
  // gradients once; mean 35 indices in 7 bags.
  const std::int64_t head = 5 * sizeof(std::int64_t), bags = 7, indices = 35;
  const std::int64_t per_batch = 3 * head + 2 * (indices + bags) * static_cast<std::int64_t>(sizeof(std::int64_t)) +
                                 bags * dim_ * static_cast<std::int64_t>(sizeof(float));
  log_.reserve(static_cast<std::size_t>(per_batch * batches * static_cast<std::int64_t>(grads_.size()) * 11 / 10));
}

void EmbeddingTable::init(std::uint64_t seed, int server) {
  for (std::int64_t r = 0; r < rows_; ++r)
    for (int c = 0; c < dim_; ++c) weight_[r * dim_ + c] = initial_value(seed, server, r, c);
}

void EmbeddingTable::check_trainer(int trainer) const {
  if (trainer < 0 || trainer >= static_cast<int>(grads_.size()))
    throw std::invalid_argument(fmt::format("there is no trainer {}", trainer));
}

void EmbeddingTable::lookup(int trainer, std::int64_t batch, const std::int64_t* indices, std::size_t n,
                            const std::int64_t* offsets, std::size_t bags, float* out) {
  check_trainer(trainer);
  validate_bags(indices, n, offsets, bags, rows_);
  const std::size_t dim = static_cast<std::size_t>(dim_);
  for (std::size_t b = 0; b < bags; ++b) {
    float* o = out + b * dim;
    std::fill(o, o + dim, 0.0f);
    const std::size_t end = b + 1 < bags ? static_cast<std::size_t>(offsets[b + 1]) : n;
    for (std::size_t i = static_cast<std::size_t>(offsets[b]); i < end; ++i) {
      const float* row = &weight_[static_cast<std::size_t>(indices[i]) * dim];
      for (std::size_t c = 0; c < dim; ++c) o[c] += row[c];
    }
  }
  record(TableEvent::kLookup, trainer, batch, indices, n, offsets, bags, nullptr);
}

void EmbeddingTable::backward(int trainer, std::int64_t batch, const std::int64_t* indices, std::size_t n,
                              const std::int64_t* offsets, std::size_t bags, const float* grad) {
  check_trainer(trainer);
  validate_bags(indices, n, offsets, bags, rows_);
  const std::size_t dim = static_cast<std::size_t>(dim_);
  auto& g = grads_[trainer];
  for (std::size_t b = 0; b < bags; ++b) {
    const std::size_t end = b + 1 < bags ? static_cast<std::size_t>(offsets[b + 1]) : n;
    for (std::size_t i = static_cast<std::size_t>(offsets[b]); i < end; ++i) {
      float* row = &g[static_cast<std::size_t>(indices[i]) * dim];
      for (std::size_t c = 0; c < dim; ++c) row[c] += grad[b * dim + c];
    }
  }
  record(TableEvent::kBackward, trainer, batch, indices, n, offsets, bags, grad);
}

void EmbeddingTable::step(int trainer, std::int64_t batch) {
  check_trainer(trainer);
  // SGD on the dense gradient, as torch.optim.SGD steps EmbeddingBag's
  // (non-sparse) weight: every row, untouched ones by zero.
  auto& g = grads_[trainer];
  for (std::size_t i = 0; i < weight_.size(); ++i) {
    weight_[i] += -lr_ * g[i];
    g[i] = 0.0f;
  }
  record(TableEvent::kStep, trainer, batch, nullptr, 0, nullptr, 0, nullptr);
}

void EmbeddingTable::record(TableEvent e, int trainer, std::int64_t batch, const std::int64_t* indices,
                            std::size_t n, const std::int64_t* offsets, std::size_t bags, const float* grad) {
  if (!keep_log_) return;
  auto put = [&](const void* p, std::size_t len) { log_.append(static_cast<const char*>(p), len); };
  const std::int64_t head[5] = {static_cast<std::int64_t>(e), trainer, batch, static_cast<std::int64_t>(n),
                                static_cast<std::int64_t>(bags)};
  put(head, sizeof head);
  if (n) put(indices, n * sizeof(std::int64_t));
  if (bags) put(offsets, bags * sizeof(std::int64_t));
  if (grad) put(grad, bags * static_cast<std::size_t>(dim_) * sizeof(float));
}

std::vector<TableLogEntry> read_table_log(const std::string& log, int dim) {
  std::vector<TableLogEntry> out;
  std::size_t pos = 0;
  auto read = [&](void* dst, std::size_t len) {
    if (pos + len > log.size()) throw std::invalid_argument("the table's event log is truncated");
    if (len) std::memcpy(dst, log.data() + pos, len);
    pos += len;
  };
  while (pos < log.size()) {
    std::int64_t head[5];
    read(head, sizeof head);
    TableLogEntry e;
    if (head[0] < 1 || head[0] > 3 || head[3] < 0 || head[4] < 0 || head[3] > (1 << 30) || head[4] > (1 << 30))
      throw std::invalid_argument(fmt::format("the table's event log has a malformed entry at byte {}", pos));
    e.event = static_cast<TableEvent>(head[0]);
    e.trainer = static_cast<int>(head[1]);
    e.batch = head[2];
    e.indices.resize(static_cast<std::size_t>(head[3]));
    e.offsets.resize(static_cast<std::size_t>(head[4]));
    read(e.indices.data(), e.indices.size() * sizeof(std::int64_t));
    read(e.offsets.data(), e.offsets.size() * sizeof(std::int64_t));
    if (e.event == TableEvent::kBackward) {
      e.grad.resize(e.offsets.size() * static_cast<std::size_t>(dim));
      read(e.grad.data(), e.grad.size() * sizeof(float));
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace dtbench::bench::hybrid
