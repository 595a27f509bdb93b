#pragma once
// The recording TrainObserver: keeps the events of iterations
// [first, first + count) of this rank, nothing of the others. Thread-safe
// where the observer contract needs it (collective_done comes from a
// backend's thread). Torch-free.
#include <atomic>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "trace/event.h"
#include "trace/observer.h"

namespace dtbench::trace {

class Timeline : public TrainObserver {
 public:
  Timeline(int first_iteration, int count);

  bool active() const override { return true; }
  void iteration_begin(int it) override;
  void iteration_end(int it) override;
  void phase_begin(Phase p) override;
  void phase_end(Phase p) override;
  void gradient_ready(std::size_t param) override;
  void collective_launch(int bucket, std::int64_t bytes, WireDType dtype,
                         const std::vector<std::size_t>& params) override;
  void collective_done(int bucket) override;
  void collective_returned(int bucket) override;
  void gather_launch(int unit, std::int64_t bytes) override;
  void gather_done(int unit) override;
  void gather_returned(int unit) override;
  void waited(double begin_us, double end_us) override;
  void cast_begin(int bucket) override;
  void cast_end(int bucket) override;
  void stage(int bucket, Stage s, double begin_us, double end_us) override;

  // The recorded events. Collectives and all-gathers that never completed
  // keep end < begin and are counted in incomplete().
  std::vector<Event> events() const;
  int incomplete() const;
  int first_iteration() const { return first_; }
  int count() const { return count_; }

  // Microseconds of the steady clock (the clock every event uses).
  static double now_us();

 private:
  const int first_, count_;
  // Read by the backend's completion callbacks on their own threads.
  std::atomic<bool> recording_{false};
  int iteration_ = -1;
  double phase_start_[kNumPhases] = {};
  double cast_start_ = 0;
  double backward_start_ = 0;
  std::vector<double> param_ready_;  // this iteration's, -1 = not yet
  mutable std::mutex mu_;            // events_, open_, open_gathers_
  std::vector<Event> events_;
  std::map<int, std::size_t> open_;  // bucket -> its collective in events_
  std::map<int, std::size_t> open_gathers_;  // unit -> its all-gather in events_
  // (kind, bucket or unit) -> when its launching call began, until it returns
  std::map<std::pair<int, int>, double> in_call_;
  void returned(EventKind kind, int index);
};

}  // namespace dtbench::trace
