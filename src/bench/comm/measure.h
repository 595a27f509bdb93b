#pragma once
// One timed run of one collective, size and placement on every group of a
// comm run at once (warm-up, timed iterations, the check, every rank's
// samples gathered), and what it runs on: the buffers of every size (Arena)
// and the copy ceiling.
#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "bench/comm/clock_sync.h"
#include "bench/comm/collective.h"
#include "bench/comm/comm_options.h"
#include "comm/communicator.h"
#include "report/comm_record.h"

namespace dtbench::bench {

// The ceiling of each size: plain copies of `bytes` from one buffer to
// another in the same memory (host memcpy, or device to device), each timed
// (as many as the timed iterations, at least 3 and at most 20, and no more
// after 50 ms: a long -n must not hold the sweep up); the median copy time
// in microseconds.
double copy_time_us(const at::Tensor& src, const at::Tensor& dst, std::int64_t bytes, int iters,
                    const c10::Device& device);

// Buffers for every size of one collective and placement, sized for the
// largest: iteration i runs on window i mod (how many fit), as nccl-tests
// shifts its send and receive pointers by the message size each iteration.
struct Arena {
  at::Tensor in;   // undefined for in-place (the input lives in `out`)
  at::Tensor out;
  bool in_place = false;

  // Buffers for every size of `sizes` (the most each needs).
  Arena(const CollectiveDef& def, const std::vector<CollArgs>& sizes, bool in_place_);
  // How many windows of this size fit.
  std::int64_t windows(std::int64_t in_count, std::int64_t out_count) const;
  // Window k's input and output.
  std::pair<at::Tensor, at::Tensor> window(const CollectiveDef& def, const CollArgs& a, std::int64_t k) const;
};

// The ranks this run spans: `world` (every rank: start lines, gathers) and
// `group` (the ranks this one runs the collective with: `world` without a
// split), and every group's job ranks.
struct Job {
  comm::Communicator& world;
  comm::Communicator& group;
  std::vector<std::vector<int>> groups;
  // The communicators over this rank's group that run the collective at
  // once (--concurrent): `group` first. Empty: `group` alone.
  std::vector<comm::Communicator*> lanes;
};

// The index in job.groups of the group holding job rank `rank`.
int group_index(const Job& job, int rank);

// Times one placement of one size on every group at once; returns each
// group's timing, in the order of job.groups.
std::vector<report::CommTiming> measure(const CollectiveDef& def, const CollArgs& args, bool in_place,
                                        const CommBenchOptions& opts, const ClockSync& clock, const Arena& arena,
                                        const Job& job, const std::vector<std::uint64_t>& group_bytes,
                                        double copy_rate_gbs, std::pair<double, double>* window = nullptr);

}  // namespace dtbench::bench
