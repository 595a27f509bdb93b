#pragma once
// One data-parallel training job started from the CLI: `dtbench ddp` runs
// one per table row, `dtbench compare` one per grid point. The job is this
// executable's hidden `ddp --run-json` worker mode on `world` local ranks
// (dtbench's launcher, or mpirun for the mpi backend).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/run_options.h"
#include "cli/train_flags.h"
#include "train/train_options.h"

namespace dtbench::cli {


// Intra-op threads per rank for every job of a sweep on this host: the
// requested count, or (0 = auto) the cores divided by the largest rank count
// among `world_sizes`, so every row gives each rank the same cores (the
// "no ddp" row included). Warns on stderr for each rank count that would run
// more threads than cores.
int sweep_threads(int requested, const std::vector<int>& world_sizes);

// The training options as the "config" object of reports.
nlohmann::ordered_json train_config_json(const train::TrainOptions& t);

// The worker command line for one job (args[0] = this executable).
std::vector<std::string> ddp_worker_args(const train::TrainOptions& t, const RunOptions& run,
                                         int world, const std::string& label,
                                         const std::string& out_json);

struct DdpJobOutcome {
  int status = 0;                 // the workers' exit status
  nlohmann::ordered_json record;  // {"run": ..., "extras": ...} when status == 0
};

// Runs the job and reads back rank 0's record.
DdpJobOutcome run_ddp_job(const train::TrainOptions& t, const RunOptions& run, int world,
                          const std::string& label);

// Throws UsageError when the options cannot run at all: check_train_flags's
// reasons, and those that need LibTorch (fp16 autocast on this CPU, the GPUs,
// an unknown model or too small image).
void check_trainable(const train::TrainOptions& t, const std::string& backend);

}  // namespace dtbench::cli
