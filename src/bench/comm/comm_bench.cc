#include "bench/comm/comm_bench.h"

#include <chrono>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "bench/comm/buffers.h"
#include "bench/comm/collective.h"
#include "comm/communicator.h"
#include "core/cpu_time.h"
#include "core/error.h"
#include "device/device.h"

namespace dtbench::bench {
namespace {

using Clock = std::chrono::steady_clock;

// On a GPU an operation has finished when the device has: gloo's wait only
// orders the current stream after it.
void run_once(const CollectiveDef& def, const CollArgs& args, Buffers& b) {
  def.run(args, b.in, b.out)->wait(args.comm->timeout());
  device::synchronize(args.device);
}

report::CommTiming measure(const CollectiveDef& def, const CollArgs& args, bool in_place,
                           const CommBenchOptions& opts, std::uint64_t bytes) {
  comm::Communicator& comm = *args.comm;
  report::CommTiming t;
  t.ran = true;
  Buffers b = prepare_buffers(def, args, in_place);
  for (int i = 0; i < opts.warmup; ++i) run_once(def, args, b);
  comm.barrier();
  const double cpu_start = process_cpu_seconds();
  const auto start = Clock::now();
  for (int i = 0; i < opts.iters; ++i) run_once(def, args, b);
  const double wall_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  const double my_us = wall_us / opts.iters;
  const double my_cpu_util = wall_us > 0 ? (process_cpu_seconds() - cpu_start) * 1e6 / wall_us : 0;

  const std::int64_t my_wrong = opts.check ? run_and_count_wrong(def, args, in_place) : 0;

  // Reduce across ranks: every rank's time and cores busy, and the total of
  // wrong elements.
  at::Tensor mine = at::tensor({my_us, my_cpu_util}, at::kDouble);
  at::Tensor all = at::zeros({2 * comm.size()}, at::kDouble);
  comm.allgather(mine, all)->wait(comm.timeout());
  at::Tensor wrong = at::full({1}, my_wrong, at::kLong);
  comm.allreduce(wrong, wrong, comm::ReduceOp::kSum)->wait(comm.timeout());

  const auto* p = all.data_ptr<double>();
  double util = 0;
  for (int r = 0; r < comm.size(); ++r) {
    t.rank_us.push_back(p[2 * r]);
    util += p[2 * r + 1];
  }
  t.cpu_util = util / comm.size();
  double sum = 0;
  t.min_rank_us = t.max_rank_us = t.rank_us[0];
  for (double x : t.rank_us) {
    sum += x;
    t.min_rank_us = std::min(t.min_rank_us, x);
    t.max_rank_us = std::max(t.max_rank_us, x);
  }
  t.time_us = sum / comm.size();
  if (opts.topology.ranks() == comm.size()) t.node_us = launch::per_node_mean(opts.topology, t.rank_us);
  // algbw in GB/s (1e9 bytes): bytes per microsecond / 1e3.
  t.algbw_gbs = t.time_us > 0 ? static_cast<double>(bytes) / t.time_us / 1e3 : 0;
  t.busbw_gbs = t.algbw_gbs * def.bus_factor(comm.size());
  t.wrong = wrong.item<std::int64_t>();
  return t;
}

}  // namespace

CommBenchResult run_comm_bench(comm::Communicator& comm, const CommBenchOptions& opts,
                               const std::function<void(const report::CommRecord&)>& on_record) {
  validate_comm_options(opts, comm.size());
  const auto sizes = size_sweep(opts.sweep);
  const auto elem = comm::element_size(opts.dtype);
  const c10::Device dev = device::select(opts.device, opts.device_index);

  CommBenchResult result;
  for (const auto c : opts.collectives) {
    const CollectiveDef& def = collective_def(c);
    const std::string why = comm.unsupported_reason(c, opts.dtype, opts.op);
    if (!why.empty()) {
      result.skipped.push_back(fmt::format("{}: {}", comm::to_string(c), why));
      continue;
    }
    for (const auto bytes_requested : sizes) {
      CollArgs args;
      args.comm = &comm;
      args.dtype = opts.dtype;
      args.op = opts.op;
      args.root = opts.root;
      args.rank = comm.rank();
      args.nranks = comm.size();
      args.device = dev;
      args.count = static_cast<std::int64_t>(
          element_count(bytes_requested, elem, def.splits ? comm.size() : 1));
      const std::uint64_t bytes = static_cast<std::uint64_t>(args.count) * elem;

      report::CommRecord rec;
      rec.collective = comm::to_string(c);
      rec.bytes = bytes;
      rec.count = static_cast<std::uint64_t>(args.count);
      rec.dtype = comm::to_string(opts.dtype);
      rec.op = comm::is_reduction(c) ? comm::to_string(opts.op) : "none";
      rec.root = (c == comm::Collective::kBroadcast || c == comm::Collective::kReduce) ? opts.root : -1;
      if (opts.out_of_place) rec.out_of_place = measure(def, args, false, opts, bytes);
      if (opts.in_place && def.in_place != InPlace::kNone)
        rec.in_place = measure(def, args, true, opts, bytes);
      if (on_record) on_record(rec);
      result.records.push_back(std::move(rec));
    }
  }
  return result;
}

}  // namespace dtbench::bench
