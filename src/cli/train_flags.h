#pragma once
// The training flags `ddp` and `compare` share.
#include <string>
#include <vector>

#include "train/train_options.h"

namespace CLI {
class App;
}

namespace dtbench::cli {

// The training flags of `ddp` and `compare` (model size, batch, iterations,
// threads, seed, SGD, --amp, --no-broadcast-buffers ...). With `grid`,
// --model, --reducer, --bucket-cap-mb and --compression are left to the
// caller (compare takes lists).
void add_train_flags(CLI::App& cmd, train::TrainOptions& t, bool grid);

// "1,2,4" -> {1, 2, 4}; throws UsageError naming --world-sizes.
std::vector<int> parse_world_sizes(const std::string& text);

// --trace FILE for one row / grid point of a sweep: FILE with the run's name
// before its extension ("t.json", "1N/2R" -> "t.1N-2R.json").
std::string trace_path_for(const std::string& base, const std::string& run);

// Throws UsageError for training options that cannot run, as far as that is
// known without LibTorch: bad values, an unwritable --trace, a reducer the
// backend cannot serve, nccl without --device cuda. (cli/jobs/ddp_job.h's
// check_trainable adds what needs it.)
void check_train_flags(const train::TrainOptions& t, const std::string& backend);

}  // namespace dtbench::cli
