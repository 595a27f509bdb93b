// `dtbench hybrid --check`: an EmbeddingTable driven like a server by two
// trainers, its log replayed on PyTorch's EmbeddingBag. The true run passes;
// a wrong row returned, a lost step and a garbled final table each fail.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "bench/hybrid/embedding_table.h"
#include "bench/hybrid/hybrid_check.h"
#include "core/error.h"

namespace dtbench::bench::hybrid {
namespace {

struct TableRun {
  HybridOptions o;
  EmbeddingTable table, before_step;
  std::vector<std::vector<LookupSum>> sums;
  std::int64_t batches = 6;
  TableRun()
      : o(options()), table(o.num_embeddings, o.embedding_dim, o.trainers, o.lr, true),
        before_step(o.num_embeddings, o.embedding_dim, o.trainers, o.lr, false) {
    table.init(o.seed, 0);
    sums.assign(o.trainers, std::vector<LookupSum>(static_cast<std::size_t>(batches)));
  }
  static HybridOptions options() {
    HybridOptions o;
    o.trainers = 2;
    o.servers = 1;
    o.num_embeddings = 30;
    o.embedding_dim = 8;
    return o;
  }
  // Trainers take turns. `wrong_row`: trainer 1's batch 3 receives the bags
  // pooled with row+1 for its first index (a server that logged the request
  // but read the wrong row); `skip_step`: trainer 0's step of batch 2 is
  // applied nowhere.
  // `stale`: trainer 1's batch 3 receives bags pooled from the table as it
  // was before trainer 0's step of batch 3 (one step stale). `scale`: the
  // gradients' size (1e-4 is a real run's order at lr 0.05).
  bool stale = false;
  float scale = 1;
  void go(bool wrong_row = false, bool skip_step = false) {
    std::mt19937_64 rng(5);
    for (std::int64_t b = 0; b < batches; ++b)
      for (int t = 0; t < o.trainers; ++t) {
        auto batch = make_batch(rng, o.num_embeddings);
        std::vector<float> out(batch.bags() * o.embedding_dim);
        if (stale && t == 1 && b == 3) {
          std::vector<float> scratch(out.size());
          before_step.lookup(t, b, batch.indices.data(), batch.indices.size(), batch.offsets.data(), batch.bags(),
                             scratch.data());
          table.lookup(t, b, batch.indices.data(), batch.indices.size(), batch.offsets.data(), batch.bags(),
                       out.data());
          out = scratch;
        } else {
          table.lookup(t, b, batch.indices.data(), batch.indices.size(), batch.offsets.data(), batch.bags(),
                       out.data());
        }
        if (wrong_row && t == 1 && b == 3) {
          EmbeddingTable copy = table;
          auto wrong = batch.indices;
          wrong[0] = (wrong[0] + 1) % o.num_embeddings;
          copy.lookup(t, b, wrong.data(), wrong.size(), batch.offsets.data(), batch.bags(), out.data());
        }
        sums[t][static_cast<std::size_t>(b)] = lookup_sum(out.data(), out.size());
        std::vector<float> grad(out.size());
        for (std::size_t i = 0; i < grad.size(); ++i)
          grad[i] = scale * (0.01f * static_cast<float>((i * 7 + b + t) % 11) - 0.05f);
        table.backward(t, b, batch.indices.data(), batch.indices.size(), batch.offsets.data(), batch.bags(),
                       grad.data());
        before_step = table;
        if (!(skip_step && t == 0 && b == 2)) table.step(t, b);
      }
  }
};

// The replay of `r` (against `table`, the server's final table) must fail,
// naming `what`.
void expect_replay_fails(const TableRun& r, const std::vector<float>& table, const std::string& what) {
  try {
    replay_server(r.o, 0, r.table.log(), r.sums, r.batches, table);
    ADD_FAILURE() << "the replay passed; expected: " << what;
  } catch (const VerificationError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(HybridCheck, TheTrueRunMatchesPyTorchsEmbeddingBag) {
  TableRun r;
  r.go();
  const auto rep = replay_server(r.o, 0, r.table.log(), r.sums, r.batches, r.table.weight());
  EXPECT_EQ(rep.lookups, 12);
  EXPECT_EQ(rep.steps, 12);
  EXPECT_LE(rep.max_table_diff, rep.tolerance);
}

TEST(HybridCheck, AReplyOfAWrongRowFails) {
  TableRun r;
  r.go(/*wrong_row=*/true);
  expect_replay_fails(r, r.table.weight(), "trainer 1's lookup of batch 3");
}

TEST(HybridCheck, ALookupOneStepStaleFails) {
  // Gradients of a real run's size: one step moves a touched value by
  // ~lr * 1e-4 * (a few bag gradients).
  TableRun r;
  r.stale = true;
  r.scale = 2e-3f;
  r.go();
  expect_replay_fails(r, r.table.weight(), "trainer 1's lookup of batch 3");
}

TEST(HybridCheck, ALostStepFails) {
  TableRun r;
  r.go(false, /*skip_step=*/true);
  expect_replay_fails(r, r.table.weight(), "is missing trainer 0's batch 2");
}

TEST(HybridCheck, AGarbledFinalTableFails) {
  TableRun r;
  r.go();
  auto table = r.table.weight();
  table[17] += 1e-3f;
  expect_replay_fails(r, table, "row 2 column 1");
}

}  // namespace
}  // namespace dtbench::bench::hybrid
