#include "bench/comm/comm_options.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::bench {

void validate_comm_options(const CommBenchOptions& opts, int world_size) {
  if (opts.root < 0 || opts.root >= world_size)
    throw UsageError(fmt::format("--root {} is not a rank of this {}-rank job", opts.root, world_size));
  if (opts.iters < 1) throw UsageError("--iters must be at least 1");
  if (opts.warmup < 0) throw UsageError("--warmup must not be negative");
  if (opts.run_cycles < 1) throw UsageError("--run-cycles must be at least 1");
  if (opts.compute_gemm < 0 || (opts.compute_gemm > 0 && (opts.compute_gemm < 8 || opts.compute_gemm > 16384)))
    throw UsageError(fmt::format("--with-compute gemm:{}: N must be within 8-16384", opts.compute_gemm));
  if (opts.agg_iters < 1 || opts.agg_iters > 1024)
    throw UsageError(fmt::format("--agg-iters {} must be within 1-1024", opts.agg_iters));
  if (opts.concurrent < 1 || opts.concurrent > 64)
    throw UsageError(fmt::format("--concurrent {} must be within 1-64", opts.concurrent));
  for (const auto c : opts.collectives)
    if ((c == comm::Collective::kPingpong || c == comm::Collective::kBarrier) && opts.concurrent > 1)
      throw UsageError(fmt::format("--concurrent: {} is timed one at a time; run it with --concurrent 1",
                                   comm::to_string(c)));
  for (const auto c : opts.collectives)
    if (c == comm::Collective::kPingpong && opts.agg_iters > 1)
      throw UsageError("--agg-iters: pingpong times one round trip at a time; run it with -m 1");
    else if (c == comm::Collective::kBarrier && opts.agg_iters > 1)
      throw UsageError("--agg-iters: barrier is checked by each iteration's arrivals; run it with -m 1");
  if (opts.cuda_graph < 0 || opts.cuda_graph > 1000000)
    throw UsageError(fmt::format("--cuda-graph {} must be within 0-1000000 (launches; 0: no graph)", opts.cuda_graph));
  if (opts.cuda_graph > 0 && opts.warmup < 1)
    throw UsageError("--cuda-graph needs -w 1 or more: a communicator's first use (NCCL's connection set-up) must "
                     "run before the capture, not inside it");
  if (opts.cuda_graph > 0 && opts.compute_gemm > 0)
    throw UsageError("--cuda-graph with --with-compute: the GEMM thread's side is timed by iteration, not by graph "
                     "launch; run them apart");
  for (const auto c : opts.collectives)
    if (c == comm::Collective::kBarrier && opts.cuda_graph > 0)
      throw UsageError("--cuda-graph: barrier waits on the host (c10d's NCCL barrier synchronises the device), which "
                       "a graph capture cannot hold; run it without -G");
  for (double q : opts.percentiles)
    if (!(q >= 0 && q <= 100)) throw UsageError(fmt::format("--percentiles: {} is not within 0-100", q));
  if (!(opts.spike_mad > 0)) throw UsageError(fmt::format("--spike-mad must be positive (got {})", opts.spike_mad));
  if (opts.delay_rank >= world_size)
    throw UsageError(fmt::format("--inject-delay: rank {} is not a rank of this {}-rank job", opts.delay_rank, world_size));
  size_sweep(opts.sweep);
}

}  // namespace dtbench::bench
