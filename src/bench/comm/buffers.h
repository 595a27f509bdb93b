#pragma once
// Buffers for one run of a collective row, and the one-shot exact check.
// Shared by the benchmark driver and the collectives test so both exercise
// the same placement logic.
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "bench/comm/collective.h"

namespace dtbench::bench {

struct Buffers {
  at::Tensor in;
  at::Tensor out;
};

// This rank's input and output for `def`. Out-of-place: separate tensors.
// In-place: one tensor (InPlace::kSame) or the input as chunk `rank` of the
// output (kRankChunk). Outputs start as -1, a value no row ever expects, so
// an element the collective never wrote counts as wrong (bool, where -1 is
// true: the negation of the expected result).
Buffers prepare_buffers(const CollectiveDef& def, const CollArgs& args, bool in_place);

// Prepares fresh buffers, runs the collective once, waits, and returns the
// number of this rank's output elements that differ from the expected value
// (0 where nothing is defined on this rank). With `in_flight` > 1, that many
// operations are issued back to back before the first wait (as -m times
// them), each on its own buffers and its own data (seed per operation), so
// operations that mix up each other's buffers are caught.
std::int64_t run_and_count_wrong(const CollectiveDef& def, const CollArgs& args, bool in_place, int in_flight = 1);
// The same on several communicators over the same ranks (--concurrent):
// operation k runs on lanes[k mod lanes.size()], so every lane has one in
// flight at once when in_flight >= lanes.size().
std::int64_t run_and_count_wrong(const CollectiveDef& def, const CollArgs& args, bool in_place, int in_flight,
                                 const std::vector<comm::Communicator*>& lanes);

// The test data seed of in-flight operation k (0: args.seed itself).
std::uint64_t in_flight_seed(std::uint64_t seed, int k);

}  // namespace dtbench::bench
