#pragma once
// The Work handles the c10d communicator returns: one c10d work (its error
// translated and explained, a post-step once it completed) and a pair of
// works (a sendrecv's two halves), several works as one.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "compat/c10d_compat.h"

namespace dtbench::comm {

// Wraps `work`, the collective `what` ("gloo allreduce"). `explain`: asked
// once when the work fails, for what is known about why (a failure another
// node's launcher published); "" adds nothing. `post`: runs once the work
// completed (copying a result into the caller's output, waiting for the
// device). `failed`: set when this work fails (the communicator's close()
// then aborts instead of shutting down). `poll`: poll_until_completed before
// c10d's wait(timeout). `capturing` (may be empty): true while the caller's
// stream is captured into a CUDA graph; wait() then only orders that stream
// after the work (c10d's wait without a timeout), with no host wait, no
// poll and no `post`, none of which a capture allows.
WorkPtr wrap_c10d_work(c10::intrusive_ptr<compat::C10dWork> work, std::string what,
                       std::function<std::string()> explain, std::function<void()> post,
                       std::shared_ptr<std::atomic<bool>> failed, bool poll,
                       std::function<bool()> capturing = {});

// Both halves of a sendrecv: wait() waits for `a`, then for `b` in what is
// left of the timeout.
WorkPtr pair_work(WorkPtr a, WorkPtr b);
// Several works as one (a collective made of several calls): wait() waits
// for each in turn in what is left of the timeout.
WorkPtr joined_work(std::vector<WorkPtr> works);

// Returns once `work` has completed (or failed), or at `timeout` from now:
// the first 2 ms in a spin that yields the core, then 50-us sleeps. Handles
// made with `poll` call it before c10d's wait(timeout), which then finds the
// work done at its first check (ProcessGroupNCCL's wait with a timeout checks
// once, then sleeps a whole millisecond between checks); a work still
// running at the deadline is left to that wait, whose own timeout names it.
void poll_until_completed(compat::C10dWork& work, std::chrono::milliseconds timeout);

}  // namespace dtbench::comm
