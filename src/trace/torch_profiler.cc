#include "trace/torch_profiler.h"

#include <cstdio>
#include <set>

#include <ATen/record_function.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include "core/error.h"

// Declared in torch/csrc/profiler/kineto_shim.h, which includes Kineto's own
// headers (not shipped with every LibTorch); the same symbol in 1.13 and 2.x.
// What torch.profiler calls to add distributedInfo to a trace.
namespace torch::autograd::profiler {
TORCH_API void addMetadataJson(const std::string& key, const std::string& value);
}  // namespace torch::autograd::profiler

namespace dtbench::trace {

namespace {

namespace kp = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

class TorchProfiler final : public TrainObserver {
 public:
  explicit TorchProfiler(TorchProfilerOptions o)
      : o_(std::move(o)),
        // Input shapes recorded, as torch.profiler.profile(record_shapes=True).
        config_(ProfilerState::KINETO, /*report_input_shapes=*/true) {
    activities_.insert(ActivityType::CPU);
    if (o_.cuda) activities_.insert(ActivityType::CUDA);
  }
  ~TorchProfiler() override {
    step_.reset();
    if (on_) kp::disableProfiler();  // an exception left it on: nothing is written
  }

  void iteration_begin(int it) override {
    if (it < o_.first_iteration || it >= o_.first_iteration + o_.count) return;
    if (!on_) {
      kp::prepareProfiler(config_, activities_);
      kp::enableProfiler(config_, activities_);
      on_ = true;
    }
    // torch.profiler's step marker: a user annotation around the iteration.
    step_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    step_name_ = fmt::format("ProfilerStep#{}", it - o_.first_iteration);
    if (step_->isActive()) step_->before(step_name_.c_str());
  }

  void iteration_end(int it) override {
    if (!on_) return;
    step_.reset();  // ends the annotation
    if (it + 1 < o_.first_iteration + o_.count) return;
    // What torch.profiler adds for a distributed run (HTA reads the rank).
    kp::addMetadataJson("distributedInfo",
                        fmt::format(R"({{"backend": "{}", "rank": {}, "world_size": {}}})", o_.backend,
                                    o_.rank, o_.world_size));
    auto result = kp::disableProfiler();
    on_ = false;
    const auto tmp = o_.path + ".tmp";
    result->save(tmp);
    if (std::rename(tmp.c_str(), o_.path.c_str()) != 0)
      throw std::runtime_error(fmt::format("--torch-profiler: cannot write {}", o_.path));
  }

 private:
  TorchProfilerOptions o_;
  ProfilerConfig config_;
  std::set<ActivityType> activities_;
  std::unique_ptr<at::RecordFunction> step_;
  std::string step_name_;
  bool on_ = false;
};

}  // namespace

void require_kineto(const std::string& scratch) {
  // Whether this LibTorch has Kineto shows only when a trace is saved (the
  // header's kKinetoAvailable is the including program's macro, not the
  // library's): an empty one, before any iteration runs.
  const auto probe = scratch + ".probe";
  try {
    const ProfilerConfig config(ProfilerState::KINETO);
    const std::set<ActivityType> cpu{ActivityType::CPU};
    kp::prepareProfiler(config, cpu);
    kp::enableProfiler(config, cpu);
    kp::disableProfiler()->save(probe);
  } catch (const c10::Error&) {
    std::remove(probe.c_str());
    throw UsageError(
        "--torch-profiler: this LibTorch was built without Kineto, its profiler (Debian's LibTorch 1.13 is): "
        "use the wheel flavour, or --trace");
  }
  std::remove(probe.c_str());
}

std::unique_ptr<TrainObserver> make_torch_profiler(const TorchProfilerOptions& o) {
  require_kineto(o.path);
  return std::make_unique<TorchProfiler>(o);
}

std::string torch_profiler_rank_path(const std::string& path, int rank, int world_size) {
  if (world_size <= 1) return path;
  const auto slash = path.rfind('/');
  const auto dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1)
    return fmt::format("{}.rank{}", path, rank);
  return fmt::format("{}.rank{}{}", path.substr(0, dot), rank, path.substr(dot));
}

}  // namespace dtbench::trace
