#pragma once
// One parameter server's EmbeddingBag table (mode "sum") and the training
// the original's distributed autograd and DistributedOptimizer do on it
// (torch-free): a lookup pools rows per bag; a trainer's backward adds its
// bag gradients into that trainer's dense gradient; its step applies
// table -= lr * gradient and zeroes the gradient. With a log, every event
// is recorded in the order it was applied, for the check's replay.
#include <cstdint>
#include <string>
#include <vector>

namespace dtbench::bench::hybrid {

enum class TableEvent : std::int64_t { kLookup = 1, kBackward = 2, kStep = 3 };

class EmbeddingTable {
 public:
  EmbeddingTable(std::int64_t rows, int dim, int trainers, float lr, bool keep_log);
  // Reserves the log for `batches` batches of every trainer (of the mean
  // shape), so appending does not reallocate inside the timed epochs.
  void reserve_log(std::int64_t batches);

  // Fills the table from initial_value(seed, server, row, col).
  void init(std::uint64_t seed, int server);
  // The bags are checked first (std::invalid_argument names what is wrong).
  void lookup(int trainer, std::int64_t batch, const std::int64_t* indices, std::size_t n,
              const std::int64_t* offsets, std::size_t bags, float* out);
  void backward(int trainer, std::int64_t batch, const std::int64_t* indices, std::size_t n,
                const std::int64_t* offsets, std::size_t bags, const float* grad);
  void step(int trainer, std::int64_t batch);

  std::int64_t rows() const { return rows_; }
  int dim() const { return dim_; }
  const std::vector<float>& weight() const { return weight_; }
  const std::string& log() const { return log_; }

 private:
  void record(TableEvent e, int trainer, std::int64_t batch, const std::int64_t* indices, std::size_t n,
              const std::int64_t* offsets, std::size_t bags, const float* grad);
  void check_trainer(int trainer) const;

  std::int64_t rows_;
  int dim_;
  float lr_;
  bool keep_log_;
  std::vector<float> weight_;              // [row * dim + c]
  std::vector<std::vector<float>> grads_;  // per trainer, dense like weight_
  std::string log_;
};

// The log, read back: one entry per event in the order it was applied.
struct TableLogEntry {
  TableEvent event = TableEvent::kLookup;
  int trainer = 0;
  std::int64_t batch = 0;
  std::vector<std::int64_t> indices, offsets;
  std::vector<float> grad;  // kBackward: bags x dim
};
// Throws std::invalid_argument on a truncated or malformed log.
std::vector<TableLogEntry> read_table_log(const std::string& log, int dim);

}  // namespace dtbench::bench::hybrid
