#pragma once
// --trace for one ddp/compare run: the recorder the trainer reports to,
// then (before and after training) the clock offsets, the gather to rank 0, the
// analysis and the Chrome trace file rank 0 writes atomically.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "launch/topology.h"
#include "launch/world.h"
#include "trace/chrome_trace.h"  // ClockEstimate
#include "trace/timeline.h"
#include "trace/torch_profiler.h"
#include "train/train_options.h"

namespace dtbench::comm {
class Communicator;
}

namespace dtbench::bench {

// The recorder for opts (the first opts.trace_iters timed iterations), or
// null without opts.trace_path.
std::unique_ptr<trace::Timeline> make_timeline(const train::TrainOptions& opts);

// --torch-profiler's observer for this rank (the same iterations as the
// timeline's), or null without opts.torch_profiler_path.
std::unique_ptr<trace::TorchProfiler> make_torch_profiler(const train::TrainOptions& opts,
                                                          const launch::World& world,
                                                          const std::string& backend);

// Collective over `comm` (may be null on one rank), before the traced run:
// this rank's clock against rank 0's (trace/collect.h's estimate_clock; {}
// with one rank). finish_trace takes another and the drift between the two.
trace::ClockEstimate clock_before_trace(comm::Communicator* comm);

// Collective over `comm` (may be null on one rank). On rank 0: writes
// opts.trace_path and returns the analysis as the report's "trace" object
// (docs/metrics.md); null elsewhere. `before`: clock_before_trace's estimate.
nlohmann::ordered_json finish_trace(const train::TrainOptions& opts, comm::Communicator* comm,
                                    const launch::World& world, const launch::Topology& topology,
                                    const trace::Timeline& timeline, const std::string& label,
                                    const trace::ClockEstimate& before);

}  // namespace dtbench::bench
