#include "bench/hybrid/hybrid_check.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <torch/torch.h>

#include "bench/hybrid/embedding_table.h"
#include "core/error.h"

namespace dtbench::bench::hybrid {
namespace {

at::Tensor longs(std::vector<std::int64_t>& v) {
  return torch::from_blob(v.data(), {static_cast<std::int64_t>(v.size())}, torch::kLong);
}

// The bag of each index: 0 0 1 1 1 2 ... from the offsets.
at::Tensor bag_of_index(const std::vector<std::int64_t>& offsets, std::size_t n) {
  std::vector<std::int64_t> bag(n);
  for (std::size_t b = 0; b < offsets.size(); ++b) {
    const std::size_t end = b + 1 < offsets.size() ? static_cast<std::size_t>(offsets[b + 1]) : n;
    for (std::size_t i = static_cast<std::size_t>(offsets[b]); i < end; ++i) bag[i] = static_cast<std::int64_t>(b);
  }
  return torch::tensor(bag, torch::kLong);
}

}  // namespace

ServerReplay replay_server(const HybridOptions& o, int server, const std::string& log,
                           const std::vector<std::vector<LookupSum>>& sums, std::int64_t batches_per_trainer,
                           const std::vector<float>& final_table) {
  const int dim = o.embedding_dim;
  const std::int64_t rows = o.num_embeddings;
  std::vector<TableLogEntry> entries;
  try {
    entries = read_table_log(log, dim);
  } catch (const std::invalid_argument& e) {
    throw VerificationError(fmt::format("hybrid: server {}: {}", server, e.what()));
  }
  torch::NoGradGuard no_grad;
  auto w = torch::empty({rows, dim});
  {
    auto a = w.accessor<float, 2>();
    for (std::int64_t r = 0; r < rows; ++r)
      for (int c = 0; c < dim; ++c) a[r][c] = initial_value(o.seed, server, r, c);
  }
  std::vector<at::Tensor> grad(o.trainers);
  for (auto& g : grad) g = torch::zeros({rows, dim});
  // Events per trainer and kind: each batch must see a lookup, a backward
  // and a step, in that order, once.
  std::vector<std::vector<int>> stage(o.trainers, std::vector<int>(batches_per_trainer, 0));
  ServerReplay r;
  for (auto& e : entries) {
    if (e.trainer < 0 || e.trainer >= o.trainers || e.batch < 0 || e.batch >= batches_per_trainer)
      throw VerificationError(fmt::format("hybrid: server {} logged trainer {} batch {}, which never ran",
                                          server, e.trainer, e.batch));
    int& st = stage[e.trainer][e.batch];
    const int want = static_cast<int>(e.event) - 1;  // lookup 0, backward 1, step 2
    if (st != want)
      throw VerificationError(fmt::format(
          "hybrid: server {} applied trainer {}'s batch {} out of order (a {} after {} of lookup, "
          "backward, step)",
          server, e.trainer, e.batch,
          e.event == TableEvent::kLookup ? "lookup" : e.event == TableEvent::kBackward ? "backward" : "step", st));
    ++st;
    switch (e.event) {
      case TableEvent::kLookup: {
        // PyTorch's EmbeddingBag, mode "sum" (mode 0).
        const auto out = std::get<0>(torch::embedding_bag(w, longs(e.indices), longs(e.offsets), false, 0))
                             .contiguous();
        const auto want_sum = lookup_sum(out.data_ptr<float>(), static_cast<std::size_t>(out.numel()));
        const auto& got = sums[e.trainer][static_cast<std::size_t>(e.batch) * o.servers + server];
        if (!same_lookup(got, want_sum))
          throw VerificationError(fmt::format(
              "hybrid: trainer {}'s lookup of batch {} from server {} differs from PyTorch's EmbeddingBag "
              "on the replayed table (sum {:.9g}, weighted {:.9g}; reference {:.9g}, {:.9g})",
              e.trainer, e.batch, server, got.sum, got.weighted, want_sum.sum, want_sum.weighted));
        ++r.lookups;
        break;
      }
      case TableEvent::kBackward: {
        const auto g = torch::from_blob(e.grad.data(), {static_cast<std::int64_t>(e.offsets.size()), dim});
        grad[e.trainer].index_add_(0, longs(e.indices), g.index_select(0, bag_of_index(e.offsets, e.indices.size())));
        ++r.backwards;
        break;
      }
      case TableEvent::kStep:
        // The server's w += -(lr * g) rounds lr * g first: so does this
        // (add_ with alpha may fuse the multiply into the add).
        w.sub_(grad[e.trainer] * o.lr);
        grad[e.trainer].zero_();
        ++r.steps;
        break;
    }
  }
  for (int t = 0; t < o.trainers; ++t)
    for (std::int64_t b = 0; b < batches_per_trainer; ++b)
      if (stage[t][b] != 3)
        throw VerificationError(fmt::format("hybrid: server {} is missing trainer {}'s batch {} ({} of lookup, "
                                            "backward, step logged)",
                                            server, t, b, stage[t][b]));
  if (final_table.size() != static_cast<std::size_t>(rows * dim))
    throw VerificationError(fmt::format("hybrid: server {}'s table has {} values, not {}", server,
                                        final_table.size(), rows * dim));
  // The same updates in the same order and the same rounding (bit for bit
  // here): a few ulps at most, where one lost step moves a touched value by
  // ~1e-4.
  const float* ref = w.data_ptr<float>();
  for (std::size_t i = 0; i < final_table.size(); ++i) {
    const double d = std::fabs(static_cast<double>(final_table[i]) - ref[i]);
    const double allowed = 8 * static_cast<double>(std::numeric_limits<float>::epsilon()) * (1 + std::fabs(ref[i]));
    r.max_table_diff = std::max(r.max_table_diff, d);
    r.tolerance = std::max(r.tolerance, allowed);
    if (!(d <= allowed))
      throw VerificationError(fmt::format(
          "hybrid: server {}'s final table at row {} column {} is {:.9g}, the replay's {:.9g}", server,
          static_cast<std::int64_t>(i) / dim, static_cast<std::int64_t>(i) % dim, final_table[i], ref[i]));
  }
  return r;
}

}  // namespace dtbench::bench::hybrid
