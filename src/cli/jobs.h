#pragma once
// The seam between dtbench's two executables. `dtbench`, the front end,
// parses every command line, prints help, refuses bad flags and runs the
// commands that need no LibTorch (diff, report); the work of the others is a
// job below. dtbench-torch links their definitions (cli/jobs/*.cc); the
// front end links cli/hand_off.cc instead, where each job execs
// dtbench-torch with the same command line, which parses it again and runs
// the job. Both link the same flags, checks and main (cli/cmd_*.cc).
#include <cstdint>
#include <string>
#include <vector>

#include "bench/comm/comm_options.h"
#include "bench/compare/grid.h"
#include "bench/hybrid/hybrid_config.h"
#include "bench/kvstore/kv_config.h"
#include "cli/project_flags.h"
#include "project/projection.h"
#include "project/strategies.h"
#include "cli/run_options.h"
#include "train/train_options.h"

namespace dtbench::cli {

struct EnvFlags {
  std::string json_path;
  bool as_json = false;
  bool probe = false;
  int threads = 0;
  std::string device = "cpu";
};

struct ModelsFlags {
  std::string json_path;
};

struct CommFlags {
  RunOptions run;
  std::string min_bytes = "1K";
  std::string max_bytes = "32M";
  double factor = 2;
  std::string increment = "0";
  int iters = 20;
  int warmup = 5;
  int check = 1;
  std::string op = "sum";
  std::string dtype = "float32";
  std::string collective = "allreduce";
  int root = 0;
  std::string placement = "both";
  std::string device = "cpu";
  std::int64_t seed = 0;
  std::string percentiles = "50,99";
  double spike_mad = 5;
  int run_cycles = 1;
  int average = 1;            // nccl-tests' -a: 0 rank 0, 1 average, 2 min, 3 max
  int concurrent = 1;        // communicators running each collective at once
  int blocking = 0;           // nccl-tests' -z: 1 waits for each operation before the next
  int agg_iters = 1;          // nccl-tests' -m: operations per timed iteration
  int cuda_graph = 0;         // nccl-tests' -G: graph launches, 0 = none
  int memory = 0;             // -M 1: buffer bytes and allocator peak per rank (nccl-tests' 0|1)
  std::string with_compute;   // "gemm:N": a GEMM thread beside the collective, "" = none
  std::string split_sizes = "uniform";  // alltoallv's parts
  std::string inject_delay;  // "RANK:MICROSECONDS", "" = none
  std::string split;         // "mod:N", "div:N", "and:MASK", "" = none
  std::string groups;        // a layout's groups by name: "tp=2", "dp,tp=2"; "" = none
  std::string csv_path;      // --csv: the table as CSV, "" = none
};

struct DdpFlags {
  RunOptions run;
  train::TrainOptions train;
  std::string world_sizes = "1,2";
  bool no_baseline = false;
  std::string percentiles = "50,75,90,95";  // benchmark.py's
  std::string jsonl;     // append each finished row here ("" = no log)
  std::string resume;    // continue this log
  std::string run_json;  // internal: a row worker writes its record here
  std::string label;     // internal: the row's label
  bool world_sizes_given = false;
};

struct CompareFlags {
  RunOptions run;
  train::TrainOptions train;
  std::string models = "resnet50";
  std::string world_sizes = "1,2";
  bool world_sizes_given = false;
  std::string reducers = "ddp,overlap,sync";
  std::string bucket_caps = "1,5,10,25,50";
  std::string compressions = "none";
  std::string baseline = "ddp";
  std::string jsonl = "dtbench-compare.jsonl";
  std::string resume;
  bool no_progress = false;
};

struct KvFlags {
  RunOptions run;
  bench::kv::KvOptions kv;
  std::string mode = "dist_sync";
  std::string model;              // torchvision-shaped arrays (every parameter)
  std::string network = "resnet";  // measure.py's --network
  int num_layers = 152;            // measure.py's --num-layers (its default)
  int arrays = 0;
  std::string size = "4M";
  std::string optimizer = "none";
  std::int64_t bigarray = 1000000;
  int check = 1;
};

struct HybridFlags {
  RunOptions run;
  bench::hybrid::HybridOptions h;
  int check = 1;
};

// The checks a command's flags pass before its job, which both halves use.
// comm's options from its flags; throws UsageError (a size, a collective,
// a root outside --nproc, a backend that cannot move these buffers).
bench::CommBenchOptions comm_bench_options(const CommFlags& f);
// ddp's rank counts against its flags: --reducer none at one rank only, an
// --inject-delay rank that the widest row has. Throws UsageError.
void check_ddp_world_sizes(const DdpFlags& f, const std::vector<int>& sizes);
// compare's grid from its flags (--world-sizes as given), checked: the
// lists, --baseline among --reducers, a reducer's own flags with that
// reducer and, where `ranks_known` (the world sizes are the run's, not a
// stand-in), --inject-delay's rank and cores for --bind. Throws UsageError.
bench::GridSpec compare_spec(const CompareFlags& f, bool ranks_known = true);
// project's options and strategies from its flags and network reports,
// checked. Throws UsageError.
struct ProjectPlan {
  project::ProjectOptions options;
  std::vector<project::Strategy> strategies;
  bool search = false;  // --search: options.world_sizes holds its one world size
};
ProjectPlan project_plan(const ProjectFlags& f);
// One grid point's training options.
train::TrainOptions point_options(const train::TrainOptions& base, const report::PointKey& k);

// Each returns the process exit status; errors are thrown as in main.cc.
int env_job(const EnvFlags& f);
int models_job(const ModelsFlags& f);
int comm_job(CommFlags& f);
int ddp_job(DdpFlags& f);
int compare_job(CompareFlags& f);
int kvstore_job(KvFlags& f);
int hybrid_job(HybridFlags& f);
int project_job(const ProjectFlags& f);

// One node of a launch (run_options.h's launch_node: it hosts the job's
// store, a c10d TCPStore) is a job too, so `dtbench launch` and every
// --nproc start in dtbench-torch.

// Called by main() first: in dtbench-torch, the process takes the front
// end's name (/proc/PID/comm: `pgrep -x dtbench` finds it; /proc/PID/exe
// still names dtbench-torch).
void begin_jobs();

// Called by main() before it returns: stops what a job left running (the
// heartbeat thread of comm/liveness). False when it did not stop in time
// (main then ends the process without static destructors).
bool end_jobs();

}  // namespace dtbench::cli
