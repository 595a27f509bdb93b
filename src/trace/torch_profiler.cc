#include "trace/torch_profiler.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include <ATen/record_function.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include "core/error.h"
#include "core/paths.h"

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

std::set<ActivityType> activities(bool cuda) {
  std::set<ActivityType> a{ActivityType::CPU};
  if (cuda) a.insert(ActivityType::CUDA);
  return a;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

class KinetoObserver final : public TorchProfiler {
 public:
  explicit KinetoObserver(TorchProfilerOptions o)
      : o_(std::move(o)),
        // Input shapes recorded, as torch.profiler.profile(record_shapes=True).
        config_(ProfilerState::KINETO, /*report_input_shapes=*/true),
        activities_(activities(o_.cuda)) {}
  ~KinetoObserver() override {
    step_.reset();
    try {
      if (on_) kp::disableProfiler();  // an exception left it on: nothing is written
    } catch (...) {
    }
  }

  void iteration_begin(int it) override {
    // Prepared one iteration early (Kineto's set-up, CUPTI's on a GPU, out
    // of the recorded ones), as torch.profiler's warm-up step.
    if (!prepared_ && it >= std::max(o_.first_iteration - 1, 0)) {
      kp::prepareProfiler(config_, activities_);
      prepared_ = true;
    }
    if (it < o_.first_iteration || it >= o_.first_iteration + o_.count) return;
    if (!on_) {
      kp::enableProfiler(config_, activities_);
      on_ = true;
    }
    // torch.profiler's step marker: a user annotation from this iteration's
    // start to the next's (back to back, as prof.step() marks them: what the
    // loop does after an iteration's end, the loss's read, is in its step).
    step_.reset();
    step_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    step_name_ = fmt::format("ProfilerStep#{}", it - o_.first_iteration);
    if (step_->isActive()) step_->before(step_name_.c_str());
  }

  void iteration_end(int it) override {
    if (!on_ || it + 1 < o_.first_iteration + o_.count) return;
    step_.reset();  // ends the last annotation
    // What torch.profiler adds for a distributed run (HTA reads the rank).
    kp::addMetadataJson("distributedInfo",
                        fmt::format(R"({{"backend": "{}", "rank": {}, "world_size": {}}})", o_.backend,
                                    o_.rank, o_.world_size));
    result_ = kp::disableProfiler();
    on_ = false;
  }

  void save() override {
    if (!result_) throw std::runtime_error("--torch-profiler: no iteration was recorded");
    const auto tmp = o_.path + ".tmp";
    result_->save(tmp);
    if (!exists(tmp) || std::rename(tmp.c_str(), o_.path.c_str()) != 0)
      throw std::runtime_error(fmt::format("--torch-profiler: cannot write {}", o_.path));
    result_.reset();
  }

 private:
  TorchProfilerOptions o_;
  ProfilerConfig config_;
  std::set<ActivityType> activities_;
  std::unique_ptr<at::RecordFunction> step_;
  std::string step_name_;
  std::unique_ptr<kp::ProfilerResult> result_;
  bool prepared_ = false, on_ = false;
};

}  // namespace

void require_kineto(const std::string& scratch, bool cuda) {
  // Whether this LibTorch has Kineto shows only when a trace is saved (the
  // header's kKinetoAvailable is the including program's macro, not the
  // library's): an empty one, with the activities of the run (Kineto sets
  // itself up once per process, for what it is first asked to record).
  const auto probe = scratch + ".probe";
  std::string why;
  try {
    const ProfilerConfig config(ProfilerState::KINETO);
    kp::prepareProfiler(config, activities(cuda));
    kp::enableProfiler(config, activities(cuda));
    kp::disableProfiler()->save(probe);
    if (!exists(probe)) why = fmt::format("cannot write {}", probe);
  } catch (const c10::Error& e) {
    why = first_line(e.what_without_backtrace());
  }
  std::remove(probe.c_str());
  if (!why.empty())
    throw UsageError(fmt::format("--torch-profiler: this LibTorch cannot record a Kineto trace here ({}); "
                                 "Debian's LibTorch 1.13 has no Kineto: use the wheel flavour, or --trace",
                                 why));
}

std::unique_ptr<TorchProfiler> make_torch_profiler(const TorchProfilerOptions& o) {
  require_kineto(o.path, o.cuda);
  return std::make_unique<KinetoObserver>(o);
}

std::string torch_profiler_rank_path(const std::string& path, int rank, int world_size) {
  return world_size <= 1 ? path : insert_before_extension(path, fmt::format("rank{}", rank));
}

}  // namespace dtbench::trace
