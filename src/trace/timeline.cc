#include "trace/timeline.h"

#include <algorithm>
#include <chrono>

namespace dtbench::trace {

Timeline::Timeline(int first_iteration, int count) : first_(first_iteration), count_(count) {}

double Timeline::now_us() { return clock_us(); }

void Timeline::iteration_begin(int it) {
  iteration_ = it;
  recording_ = it >= first_ && it < first_ + count_;
  if (!recording_) return;
  std::fill(param_ready_.begin(), param_ready_.end(), -1.0);
  backward_start_ = 0;
  std::lock_guard<std::mutex> lock(mu_);
  open_.clear();
  open_gathers_.clear();
  Event e;
  e.kind = EventKind::kIteration;
  e.iteration = it;
  e.begin_us = e.end_us = now_us();
  events_.push_back(e);
}

void Timeline::iteration_end(int it) {
  if (!recording_) return;
  const double now = now_us();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto i = events_.size(); i-- > 0;)
    if (events_[i].kind == EventKind::kIteration && events_[i].iteration == it) {
      events_[i].end_us = now;
      break;
    }
  const double last = param_ready_.empty() ? -1 : *std::max_element(param_ready_.begin(), param_ready_.end());
  if (last >= backward_start_ && backward_start_ > 0) {
    Event e;
    e.kind = EventKind::kBackwardCompute;
    e.iteration = it;
    e.begin_us = backward_start_;
    e.end_us = last;
    events_.push_back(e);
  }
  recording_ = false;
}

void Timeline::phase_begin(Phase p) {
  if (!recording_) return;
  const double now = now_us();
  phase_start_[static_cast<int>(p)] = now;
  if (p == Phase::kBackward) backward_start_ = now;
}

void Timeline::phase_end(Phase p) {
  if (!recording_) return;
  Event e;
  e.kind = EventKind::kPhase;
  e.sub = static_cast<int>(p);
  e.iteration = iteration_;
  e.begin_us = phase_start_[static_cast<int>(p)];
  e.end_us = now_us();
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(e);
}

void Timeline::gradient_ready(std::size_t param) {
  if (!recording_) return;
  if (param >= param_ready_.size()) param_ready_.resize(param + 1, -1.0);
  param_ready_[param] = now_us();
}

void Timeline::collective_launch(int bucket, std::int64_t bytes, WireDType dtype,
                                 const std::vector<std::size_t>& params) {
  if (!recording_) return;
  const double now = now_us();
  double ready = -1;
  for (std::size_t p : params)
    if (p < param_ready_.size()) ready = std::max(ready, param_ready_[p]);
  std::lock_guard<std::mutex> lock(mu_);
  if (ready >= 0) {
    Event r;
    r.kind = EventKind::kBucketReady;
    r.iteration = iteration_;
    r.bucket = bucket;
    r.begin_us = r.end_us = std::min(ready, now);
    events_.push_back(r);
  }
  Event e;
  e.kind = EventKind::kCollective;
  e.iteration = iteration_;
  e.bucket = bucket;
  e.begin_us = now;
  e.end_us = -1;  // until collective_done
  e.bytes = bytes;
  e.dtype = static_cast<int>(dtype);
  open_[bucket] = events_.size();
  in_call_[{static_cast<int>(EventKind::kCollective), bucket}] = e.begin_us;
  events_.push_back(e);
}

void Timeline::collective_returned(int bucket) { returned(EventKind::kCollective, bucket); }
void Timeline::gather_returned(int unit) { returned(EventKind::kAllGather, unit); }

void Timeline::waited(double begin_us, double end_us) {
  if (!recording_ || !(end_us > begin_us)) return;
  Event e;
  e.kind = EventKind::kInCall;
  e.sub = 0;
  e.iteration = iteration_;
  e.begin_us = begin_us;
  e.end_us = end_us;
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(e);
}

void Timeline::returned(EventKind kind, int index) {
  if (!recording_) return;
  const double now = now_us();
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = in_call_.find({static_cast<int>(kind), index});
  if (it == in_call_.end()) return;  // launched in an iteration that is not recorded
  Event e;
  e.kind = EventKind::kInCall;
  e.sub = static_cast<int>(kind);
  e.iteration = iteration_;
  e.bucket = index;
  e.begin_us = it->second;
  e.end_us = now;
  in_call_.erase(it);
  events_.push_back(e);
}

void Timeline::collective_done(int bucket) {
  const double now = now_us();
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = open_.find(bucket);
  if (it == open_.end()) return;  // launched in an iteration that is not recorded
  events_[it->second].end_us = now;
  open_.erase(it);
}

void Timeline::gather_launch(int unit, std::int64_t bytes) {
  if (!recording_) return;
  Event e;
  e.kind = EventKind::kAllGather;
  e.iteration = iteration_;
  e.bucket = unit;
  e.begin_us = now_us();
  e.end_us = -1;  // until gather_done
  e.bytes = bytes;
  e.dtype = static_cast<int>(WireDType::kFloat32);
  std::lock_guard<std::mutex> lock(mu_);
  open_gathers_[unit] = events_.size();
  in_call_[{static_cast<int>(EventKind::kAllGather), unit}] = e.begin_us;
  events_.push_back(e);
}

void Timeline::gather_done(int unit) {
  const double now = now_us();
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = open_gathers_.find(unit);
  if (it == open_gathers_.end()) return;  // launched in an iteration that is not recorded
  events_[it->second].end_us = now;
  open_gathers_.erase(it);
}

void Timeline::cast_begin(int) {
  if (recording_) cast_start_ = now_us();
}

void Timeline::cast_end(int bucket) {
  if (!recording_) return;
  Event e;
  e.kind = EventKind::kCast;
  e.iteration = iteration_;
  e.bucket = bucket;
  e.begin_us = cast_start_;
  e.end_us = now_us();
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(e);
}

void Timeline::stage(int bucket, Stage s, double begin_us, double end_us) {
  if (!recording_) return;
  Event e;
  e.kind = EventKind::kStage;
  e.sub = static_cast<int>(s);
  e.iteration = iteration_;
  e.bucket = bucket;
  e.begin_us = begin_us;
  e.end_us = end_us;
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(e);
}

std::vector<Event> Timeline::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  auto out = events_;
  for (auto& e : out)
    // Never completed (counted by incomplete()): shown as an instant at its
    // launch, not ending before the clock's origin.
    if ((e.kind == EventKind::kCollective || e.kind == EventKind::kAllGather) && e.end_us < e.begin_us)
      e.end_us = e.begin_us;
  return out;
}

int Timeline::incomplete() const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& e : events_)
    if ((e.kind == EventKind::kCollective || e.kind == EventKind::kAllGather) && e.end_us < e.begin_us) ++n;
  return n;
}

}  // namespace dtbench::trace
