#pragma once
// What every rank's every timed iteration says about one size: percentiles,
// which rank arrives late (the straggler) and which iterations spiked. Pure
// and torch-free; the samples come from comm_bench.cc.
//
// Lateness: for iteration i, rank r's start minus the lower-median start over
// ranks (the ceil(n/2)-th earliest), on the job's common clock; a rank's
// lateness is the median of that over iterations. The lower median makes the
// late rank of a 2-rank job late by the whole gap, not half of it.
// A straggler is flagged when the latest rank's lateness exceeds 2 * the
// clock error, half the collective's own time (the smallest rank median: the
// late rank's, which did not wait; the others' include the wait) and 10 us:
// more than clock sync explains, and more than the skew a collective's own
// last steps leave between ranks (one rank often finishes tens of us before
// another, and so starts the next iteration earlier).
// Spikes: an iteration whose time exceeds its rank's median by more than
// spike_mad * max(1.4826 * MAD, 2% of the median) (MAD scaled to a normal
// sigma; the floor keeps identical samples from making every wobble a spike).
#include <cstdint>
#include <vector>

#include "report/comm_record.h"

namespace dtbench::bench {

// nccl-tests' -a: which of the ranks' mean times is the row's time.
enum class RowTime { kRank0 = 0, kAverage = 1, kMin = 2, kMax = 3 };

// The row's time from each rank's mean time (rank_us[0] is the group's
// first rank). Throws std::invalid_argument on an empty list.
double row_time(const std::vector<double>& rank_us, RowTime how);

// "rank 0's", "the average of the ranks'", ... for notes.
const char* row_time_words(RowTime how);

struct RankIterations {
  std::vector<double> start_us;  // each timed iteration's start, common clock
  std::vector<double> time_us;   // each timed iteration's time
};

// A barrier's check: the timed iterations in which some rank left before
// another had arrived (its end earlier than the other's start on the common
// clock, by more than twice the clock's error bound). 0 for a real barrier.
std::int64_t barrier_violations(const std::vector<RankIterations>& ranks, double clock_error_us);

struct IterationAnalysis {
  std::vector<double> percentile_us;  // at `qs`, over all ranks' iterations
  std::vector<double> lateness_us;    // per rank
  int late_rank = -1;
  double late_us = 0;
  bool straggler = false;
  std::int64_t spikes = 0;
  std::vector<report::CommSpike> spike_list;  // first kMaxSpikesListed, by rank then iteration
};

inline constexpr std::size_t kMaxSpikesListed = 16;

// `ranks[r]` holds rank r's iterations (all ranks the same count, >= 1).
// `ops_per_sample`: the operations a sample's time was divided over (-m's,
// times -n's under -G): lateness is per sample, so the straggler test
// compares it with a whole sample's time. Throws std::invalid_argument on
// empty or ragged input or q outside [0, 100].
IterationAnalysis analyse_iterations(const std::vector<RankIterations>& ranks, const std::vector<double>& qs,
                                     double spike_mad, double clock_error_us, double ops_per_sample = 1);

}  // namespace dtbench::bench
