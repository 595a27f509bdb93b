#pragma once
// `dtbench hybrid` (PyTorch's DDP + RPC benchmark): options, roles, wire
// operations and the deterministic table contents (pure, torch-free).
// Ranks: 0 master, 1..T trainers, T+1..T+P parameter servers. Row r of every
// table lives on server r mod P (local row r / P).
#include <cstdint>
#include <string>

#include "rpc/transport.h"

namespace dtbench::bench::hybrid {

struct HybridOptions {
  int trainers = 2;
  int servers = 1;
  int tables = 2;
  std::int64_t num_embeddings = 10000;
  int embedding_dim = 16;
  int batch_size = 32;
  int hidden = 64;     // FC stack width
  int iters = 20;
  int warmup = 2;
  float lr = 0.05f;    // embedding rows and FC (SGD)
  std::uint64_t seed = 1;
  bool check = true;   // compare the final tables with a single-process reference
  int ceiling_iters = 50;  // raw TensorPipe round trips (0 = skip)
  // Where the trainers' FC stack trains: "cpu", or "cuda" (trainer t on GPU
  // t mod the GPUs visible; embedding rows still travel through host memory).
  std::string device = "cpu";
  rpc::TransportOptions transport;
};

void validate(const HybridOptions& o);  // throws UsageError
inline int world_size_for(const HybridOptions& o) { return 1 + o.trainers + o.servers; }
inline bool is_trainer_rank(const HybridOptions& o, int r) { return r >= 1 && r <= o.trainers; }
inline int server_of_rank(const HybridOptions& o, int r) { return r - 1 - o.trainers; }
inline int server_of_row(const HybridOptions& o, std::int64_t row) { return static_cast<int>(row % o.servers); }
inline std::int64_t local_row(const HybridOptions& o, std::int64_t row) { return row / o.servers; }
// Rows of a table held by server s.
inline std::int64_t rows_on(const HybridOptions& o, int s) {
  return (o.num_embeddings - s + o.servers - 1) / o.servers;
}

// Initial value of table t, row r, column c: in [-0.5, 0.5), from a hash.
float initial_value(std::uint64_t seed, int table, std::int64_t row, int col);

enum HybridOp : std::uint32_t {
  kInit = 1,    // master: key table; server fills its rows from initial_value
  kLookup = 2,  // key table; part: int64 rows; reply: rows x dim float32
  kUpdate = 3,  // key table; parts: int64 rows, rows x dim float32 gradients; row -= lr * grad
  kDump = 4,    // key table; reply: the server's rows (local order)
  kBye = 5,
};

}  // namespace dtbench::bench::hybrid
