#pragma once
// --torch-profiler: LibTorch's own profiler (Kineto, what torch.profiler
// drives) records the traced iterations of a training run: every ATen op of
// the training thread with its input shapes, and on a GPU every kernel, copy
// and CUDA runtime call. Each rank writes the Chrome trace torch.profiler's
// export_chrome_trace writes (Kineto's shape: ProfilerStep#N around each
// iteration, distributedInfo with the backend, rank and world size), so the
// PyTorch tools (TensorBoard's profiler, HolisticTraceAnalysis, Perfetto)
// open it. A TrainObserver: the trainer's iteration boundaries prepare it
// (one iteration early, as torch.profiler's warm-up step), start and stop
// it; it installs no hooks (active() is false). Torch-free header.
#include <memory>
#include <string>

#include "trace/observer.h"

namespace dtbench::trace {

struct TorchProfilerOptions {
  std::string path;         // this rank's trace file, written atomically
  int first_iteration = 0;  // the first recorded iteration (warm-up counted)
  int count = 0;            // how many
  bool cuda = false;        // record the GPU's kernels too
  std::string backend;      // for distributedInfo
  int rank = 0;
  int world_size = 1;
};

class TorchProfiler : public TrainObserver {
 public:
  // Writes the trace the iterations recorded (after training: the save is
  // not timed); throws if none was recorded or the file cannot be written.
  virtual void save() = 0;
};

// Throws UsageError, one line, where this LibTorch cannot record a Kineto
// trace (Debian's 1.13 is built without Kineto) with the activities the run
// will use (CPU, and CUDA with `cuda`), or cannot write next to `scratch`:
// an empty trace is saved to scratch + ".probe" and removed.
void require_kineto(const std::string& scratch, bool cuda);

// The observer (require_kineto first).
std::unique_ptr<TorchProfiler> make_torch_profiler(const TorchProfilerOptions& o);

// This rank's file for --torch-profiler PATH: PATH itself for one rank,
// else PATH with ".rankR" before its extension (trace.json ->
// trace.rank0.json, trace.rank1.json, ...).
std::string torch_profiler_rank_path(const std::string& path, int rank, int world_size);

}  // namespace dtbench::trace
