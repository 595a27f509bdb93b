#pragma once
// `dtbench hybrid` (PyTorch's DDP + RPC benchmark,
// torch/distributed/benchmarks/benchmark_ddp_rpc.py): options, roles, wire
// operations, the random batches and the deterministic tables (pure,
// torch-free).
// Ranks: 0 master, 1..T trainers, T+1..T+P parameter servers. Server s holds
// one whole EmbeddingBag table (mode "sum") of num_embeddings x
// embedding_dim; every lookup asks every server for the same bags.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "rpc/transport.h"

namespace dtbench::bench::hybrid {

struct HybridOptions {
  int trainers = 8;                 // NUM_TRAINERS
  int servers = 8;                  // NUM_PS
  std::int64_t num_embeddings = 300;  // NUM_EMBEDDINGS
  int embedding_dim = 64;           // EMBEDDING_DIM
  int epochs = 100;                 // timed epochs
  int warmup = 5;                   // WARMUP_CYCLES: untimed epochs first
  int batches = 10;                 // batches per epoch
  float lr = 0.05f;                 // SGD on the tables and the FC stack
  // "sequential": one lookup per server, each waited before the next (the
  // original's rpc_sync loop); "batched": every server's lookup in flight
  // at once.
  std::string lookup = "sequential";
  std::uint64_t seed = 1;
  bool check = true;   // every lookup and the final tables against a replay on PyTorch's EmbeddingBag
  int ceiling_iters = 50;  // raw TensorPipe rounds (0 = skip)
  // Where the trainers' FC stack trains: "cpu", or "cuda" (trainer t on GPU
  // t mod the GPUs visible; the pooled rows travel through host memory).
  std::string device = "cpu";
  rpc::TransportOptions transport;
};

// The batch shape of the original: 20..50 indices, bags of 1..10 of them
// (the last one cut short), a target class of 0..7 per bag.
inline constexpr int kMinIndices = 20, kMaxIndices = 50, kMaxBag = 10, kClasses = 8;
// The FC stack after the pooled lookups (servers x dim wide): Linear to 256,
// 128, ReLU, 64, 32, 8, as the original's (which reshapes to 512 wide).
inline constexpr int kFcWidths[] = {256, 128, 64, 32, kClasses};
// Mean bags per batch (35 indices / mean step 5.5): the size of the
// messages the raw round trip echoes.
inline constexpr int kMeanBags = 6;

void validate(const HybridOptions& o);  // throws UsageError
inline int world_size_for(const HybridOptions& o) { return 1 + o.trainers + o.servers; }
inline bool is_trainer_rank(const HybridOptions& o, int r) { return r >= 1 && r <= o.trainers; }
inline int server_of_rank(const HybridOptions& o, int r) { return r - 1 - o.trainers; }

// Initial value of server s's table at (row, col): in [-0.5, 0.5), from a hash.
float initial_value(std::uint64_t seed, int server, std::int64_t row, int col);

// One batch of bags (EmbeddingBag's input and offsets) and its targets.
struct Batch {
  std::vector<std::int64_t> indices;
  std::vector<std::int64_t> offsets;  // start of each bag in indices
  std::vector<std::int64_t> targets;  // one per bag
  std::size_t bags() const { return offsets.size(); }
};
Batch make_batch(std::mt19937_64& rng, std::int64_t num_embeddings);
// Throws std::invalid_argument naming what is wrong: offsets not starting at
// 0, not increasing, past the indices, or an index outside [0, rows).
void validate_bags(const std::int64_t* indices, std::size_t n, const std::int64_t* offsets,
                   std::size_t bags, std::int64_t rows);

// A fingerprint of one lookup's reply (bags x dim floats) kept by the
// trainer: the sum, and a sum weighted by position (so swapped bags or
// columns change it).
struct LookupSum {
  double sum = 0, weighted = 0, magnitude = 0;  // magnitude: sum of |v| (sets the tolerance)
};
LookupSum lookup_sum(const float* values, std::size_t n);
// Whether two fingerprints agree to float rounding.
bool same_lookup(const LookupSum& got, const LookupSum& want);

enum HybridOp : std::uint32_t {
  kInit = 1,      // master: the server fills its table from initial_value
  kLookup = 2,    // arg0 batch; parts indices, offsets; reply: bags x dim float32 sums
  kBackward = 3,  // arg0 batch; parts indices, offsets, bags x dim gradients: into the trainer's gradient
  kStep = 4,      // arg0 batch; table -= lr * the trainer's gradient, which is zeroed
  kDump = 5,      // reply: the table
  kLogSize = 6,   // reply: one uint64, the event log's bytes
  kLog = 7,       // reply: the event log
  kBye = 8,
};

}  // namespace dtbench::bench::hybrid
