#pragma once
// The one timeline instrumentation seam (--trace): the trainer and the
// reducers report what they do to a TrainObserver and keep no timing code of
// their own. Torch-free. Without --trace they hold the null observer, whose
// calls do nothing (and `active()` false keeps the trainer from installing
// its gradient-ready hooks at all).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtbench::trace {

// Spans of the training thread.
enum class Phase : int {
  kForward = 0,    // forward and loss
  kBackward = 1,   // loss.backward() (ddp: includes c10d::Reducer's final wait)
  kCommWait = 2,   // finish_backward(): the wait after backward
  kOptimizer = 3,  // unscale, optimizer step, zero_grad
  kBroadcast = 4,  // buffers broadcast before the forward
  kDelay = 5,      // --inject-delay's sleep before the backward
};
constexpr int kNumPhases = 6;
const char* phase_name(Phase p);

// Wire dtype of a bucket's collective.
enum class WireDType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };
const char* wire_dtype_name(WireDType d);

// Steps of a fused group besides its collective (--reducer horovod, as
// Horovod's timeline shows them): the negotiation (from the first of its
// tensors being enqueued to every rank agreeing it is ready) and the copies
// into and out of the fusion buffer.
enum class Stage : int { kNegotiate = 0, kMemcpyIn = 1, kMemcpyOut = 2 };
const char* stage_name(Stage s);

// Microseconds of the steady clock: the clock every observer time is on.
double clock_us();

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  // False for the null observer: nothing is recorded, no hooks are needed.
  virtual bool active() const { return false; }
  // Iteration `it` (warm-up included, from 0) starts / ends on this rank.
  virtual void iteration_begin(int it) {}
  virtual void iteration_end(int it) {}
  virtual void phase_begin(Phase p) {}
  virtual void phase_end(Phase p) {}
  // Autograd produced parameter `param`'s gradient (training thread).
  virtual void gradient_ready(std::size_t param) {}
  // Bucket `bucket` (launch order) starts its collective of `bytes` bytes;
  // `params` are the parameters whose gradients it holds.
  virtual void collective_launch(int bucket, std::int64_t bytes, WireDType dtype,
                                 const std::vector<std::size_t>& params) {}
  // That collective completed (any thread: a backend's completion callback).
  virtual void collective_done(int bucket) {}
  // The call that launched it returned to the thread that runs the model
  // (a gradient hook in backward, the training loop): from the launch to
  // here that thread computed nothing; a blocking backend (MPI) runs the
  // whole collective inside the call. Not called where another thread
  // launches (horovod's background loop).
  virtual void collective_returned(int bucket) {}
  // A sharded strategy's all-gather of parameters (--reducer zero1/zero2:
  // bucket `unit`'s after the step; fsdp: unit `unit`'s before its forward
  // or backward, prefetched) starts, filling `bytes` bytes (training thread),
  // and completes (any thread).
  virtual void gather_launch(int unit, std::int64_t bytes) {}
  virtual void gather_done(int unit) {}
  virtual void gather_returned(int unit) {}  // as collective_returned
  // The model's thread waited for a collective or all-gather from begin_us
  // to end_us (clock_us()), possibly inside a phase it otherwise computes
  // in (zero2's previous bucket in a backward hook, fsdp's gather before a
  // unit runs, the ZeRO gathers in the step): not computing.
  virtual void waited(double begin_us, double end_us) {}
  // Compression casts of bucket `bucket` into (launch) and out of (finish)
  // its wire format.
  virtual void cast_begin(int bucket) {}
  virtual void cast_end(int bucket) {}
  // Step `s` of bucket (fused group) `bucket` ran from begin_us to end_us
  // (clock_us()); any thread.
  virtual void stage(int bucket, Stage s, double begin_us, double end_us) {}
};

// The observer that records nothing.
TrainObserver& null_observer();

// Calls phase_begin now and phase_end when it goes out of scope.
class PhaseScope {
 public:
  PhaseScope(TrainObserver& o, Phase p) : o_(o), p_(p) { o_.phase_begin(p_); }
  ~PhaseScope() { o_.phase_end(p_); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  TrainObserver& o_;
  Phase p_;
};

}  // namespace dtbench::trace
