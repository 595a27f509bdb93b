#include "bench/comm/comm_bench.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "bench/comm/buffers.h"
#include "bench/comm/clock_sync.h"
#include "bench/comm/collective.h"
#include "bench/comm/compute_load.h"
#include "bench/comm/data.h"
#include "bench/comm/iteration_stats.h"
#include "bench/comm/link_ceiling.h"
#include "bench/comm/measure.h"
#include "comm/communicator.h"
#include "core/cpu_time.h"
#include "core/error.h"
#include "device/device.h"
#include "device/memory.h"

namespace dtbench::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Each collective and size gets its own data.
std::uint64_t size_seed(std::uint64_t run_seed, comm::Collective c, std::uint64_t bytes) {
  return run_seed ^ (0x9E3779B97F4A7C15ULL * (bytes + 1)) ^ (0xC2B2AE3D27D4EB4FULL * (static_cast<std::uint64_t>(c) + 1));
}

// The run's seed: the given one, or one rank 0 draws, on every rank.
std::uint64_t agree_on_seed(comm::Communicator& comm, std::uint64_t given) {
  if (given != 0) return given;
  at::Tensor s = at::zeros({1}, at::kLong);
  if (comm.rank() == 0) {
    std::random_device rd;
    const std::uint64_t drawn = (static_cast<std::uint64_t>(rd()) << 31) ^ rd();
    s.fill_(static_cast<std::int64_t>((drawn & 0x3FFFFFFFFFFFFFFFULL) | 1));
  }
  comm.broadcast(s, s, 0)->wait(comm.timeout());
  return static_cast<std::uint64_t>(s.item<std::int64_t>());
}

// The element count of `def` at `bytes_requested` among `nranks` ranks.
std::int64_t count_for(const CollectiveDef& def, const CommBenchOptions& opts, std::uint64_t bytes_requested,
                       int nranks) {
  const auto elem = comm::element_size(opts.dtype);
  return static_cast<std::int64_t>(
      def.splits ? split_element_count(bytes_requested, elem, static_cast<std::uint64_t>(nranks), split_align(opts.dtype))
                 : element_count(bytes_requested, elem));
}

CollArgs args_for(comm::Communicator& comm, const CommBenchOptions& opts, const CollectiveDef& def,
                  const c10::Device& dev, std::uint64_t bytes_requested, std::uint64_t seed) {
  CollArgs args;
  args.comm = &comm;
  args.dtype = opts.dtype;
  args.op = opts.op;
  args.root = opts.root;
  args.rank = comm.rank();
  args.nranks = comm.size();
  args.device = dev;
  args.count = count_for(def, opts, bytes_requested, comm.size());
  args.seed = size_seed(seed, def.kind, bytes_requested);
  args.vsplit = opts.vsplit;
  if (args.vsplit.seed == 0) args.vsplit.seed = seed;  // random: the run's seed
  if (def.kind == comm::Collective::kAlltoallv)
    args.vparts = std::make_shared<const std::vector<std::vector<std::int64_t>>>(
        vsplit_matrix(args.vsplit, args.nranks, args.count, args.vsplit.seed));
  if (def.kind == comm::Collective::kAllgatherv || def.kind == comm::Collective::kReduceScatterV)
    args.vcounts = std::make_shared<const std::vector<std::int64_t>>(
        vsplit_counts(args.vsplit, args.nranks, args.count, args.vsplit.seed));
  return args;
}

// Why the job skips `c`: this rank's group's reason, or, where only other
// groups cannot run it, a line saying so; "" when every group can.
std::string skip_reason(comm::Communicator& world, comm::Communicator& group, comm::Collective c,
                        const CommBenchOptions& opts) {
  const std::string mine = group.unsupported_reason(c, opts.dtype, opts.op);
  if (&world == &group) return mine;
  at::Tensor any = at::full({1}, mine.empty() ? 0 : 1, at::kLong);
  world.allreduce(any, any, comm::ReduceOp::kMax)->wait(world.timeout());
  if (any.item<std::int64_t>() == 0) return "";
  return mine.empty() ? "another --split group cannot run it (e.g. a 1-rank group's sendrecv)" : mine;
}

// What -m M means on this backend.
std::string agg_note(const std::string& backend, int agg, bool blocking) {
  std::string how = "issued back to back, each on its own buffers, then waited together";
  if (blocking)
    return fmt::format("-m {} -z 1: each timed iteration is {} operations, each waited for before the next is issued "
                       "(a mode of dtbench's: nccl-tests' -m fuses them in one group, which its -z cannot split); "
                       "time is per operation (iteration / {}), and the check ran them one at a time",
                       agg, agg, agg);
  if (backend == "mpi") how = "run one after another (dtbench's MPI calls block)";
  if (backend == "nccl") how += " (not fused in one ncclGroupStart/End as nccl-tests' -m fuses them)";
  return fmt::format("-m {}: each timed iteration is {} operations, {}; time is per operation (iteration / {}), "
                     "and the check ran {} at once, each on its own data",
                     agg, agg, how, agg, agg);
}

void add_note(std::vector<std::string>& notes, std::string note) {
  if (!note.empty() && std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(std::move(note));
}

}  // namespace

CommBenchResult run_comm_bench(
    comm::Communicator& world, comm::Communicator& group, const std::vector<std::vector<int>>& groups,
    const CommBenchOptions& opts,
    const std::function<void(const report::CommRecord&, const CommBenchResult& so_far)>& on_record,
    const std::vector<comm::Communicator*>& more_lanes) {
  validate_comm_options(opts, world.size());
  DTBENCH_CHECK(static_cast<int>(more_lanes.size()) == opts.concurrent - 1,
                "run_comm_bench: --concurrent K needs K - 1 more communicators");
  std::size_t smallest = static_cast<std::size_t>(world.size());
  for (const auto& g : groups) smallest = std::min(smallest, g.size());
  if (groups.size() > 1 && opts.root >= static_cast<int>(smallest))
    throw UsageError(fmt::format("--root {} is not a rank of every group (the smallest has {} rank(s))", opts.root,
                                 smallest));
  std::vector<std::vector<int>> all_groups = groups;
  if (all_groups.empty()) {
    all_groups.emplace_back();
    for (int r = 0; r < world.size(); ++r) all_groups.back().push_back(r);
  }
  std::vector<comm::Communicator*> lanes{&group};
  for (auto* l : more_lanes) {
    DTBENCH_CHECK(l != nullptr && l->size() == group.size() && l->rank() == group.rank(),
                  "run_comm_bench: a --concurrent communicator spans other ranks than its group");
    lanes.push_back(l);
  }
  const Job job{world, group, all_groups, lanes};
  const bool split = groups.size() > 1;
  const auto sizes = size_sweep(opts.sweep);
  const auto elem = comm::element_size(opts.dtype);
  const c10::Device dev = device::select(opts.device, opts.device_index);

  CommBenchResult result;
  // Made before any buffer, so the CPU's counting allocator sees them all.
  std::unique_ptr<device::MemoryMeter> meter;
  if (opts.memory_report) {
    meter = device::make_memory_meter(dev);
    meter->reset_peak();
  }
  std::int64_t buffers_bytes = 0;
  std::unique_ptr<ComputeLoad> load;
  if (opts.compute_gemm > 0) load = std::make_unique<ComputeLoad>(opts.compute_gemm, dev);
  result.seed = agree_on_seed(world, opts.seed);
  // Between nodes, the link's ceiling, once per run.
  std::string link_why;
  const double link_gbs = opts.topology.nodes() > 1 && opts.topology.ranks() == world.size()
                              ? link_ceiling_gbs(world, opts.topology, opts.link_ip, opts.link_seconds, &link_why)
                              : 0;
  auto spans_nodes = [&](const std::vector<int>& members) {
    if (opts.topology.ranks() != world.size()) return false;
    for (const int r : members)
      if (opts.topology.node_of_rank[static_cast<std::size_t>(r)] !=
          opts.topology.node_of_rank[static_cast<std::size_t>(members.front())])
        return true;
    return false;
  };
  for (int cycle = 0; cycle < opts.run_cycles; ++cycle) {
    // Clocks drift apart: measured again for each pass over the sweep.
    const ClockSync clock = sync_clocks(world, opts.topology);
    result.clock_error_us = std::max(result.clock_error_us, clock.error_us);
    for (const auto c : opts.collectives) {
      const CollectiveDef& def = collective_def(c);
      // Every rank skips together: a group that cannot run it (a 1-rank
      // group's sendrecv) skips it for all, or the world's gathers would
      // pair up with another collective's.
      const std::string why = skip_reason(world, group, c, opts);
      if (!why.empty()) {
        if (cycle == 0) result.skipped.push_back(fmt::format("{}: {}", comm::to_string(c), why));
        continue;
      }
      const std::string oop_why = group.out_of_place_reason(c);
      const bool out_of_place = opts.out_of_place && oop_why.empty();
      const bool in_place = opts.in_place && def.in_place != InPlace::kNone;
      if (opts.out_of_place && !oop_why.empty())
        add_note(result.notes, fmt::format("out-of-place {} n/a: {}", comm::to_string(c), oop_why));
      if (opts.in_place && def.in_place == InPlace::kNone && c != comm::Collective::kBarrier)
        add_note(result.notes, fmt::format("in-place {} n/a: dtbench has no in-place form of it", comm::to_string(c)));
      add_note(result.notes, group.composite_reason(c).empty() ? ""
                                 : fmt::format("{}: {}; its busbw factor assumes a native one",
                                               comm::to_string(c), group.composite_reason(c)));
      add_note(result.notes, group.staging_note(c, !dev.is_cpu()));
      if (def.first_rank_times)
        add_note(result.notes, fmt::format("{}: time is rank 0's round trip (OSU's osu_latency), whatever -a says",
                                           comm::to_string(c)));
      else if (opts.average != RowTime::kAverage)
        add_note(result.notes, fmt::format("time, algbw and busbw are {}", row_time_words(opts.average)));
      if (opts.concurrent > 1)
        add_note(result.notes,
                 fmt::format("--concurrent {}: each operation runs on {} communicators over the same ranks at once, "
                             "each on the next buffer window (where fewer fit, they share one); time is until all "
                             "{} finished, algbw and busbw count all {} messages ({} x size / time), and the check "
                             "ran one on each, up to 4 at once",
                             opts.concurrent, opts.concurrent, opts.concurrent, opts.concurrent, opts.concurrent));
      if (opts.cuda_graph > 0)
        add_note(result.notes,
                 fmt::format("-G {}: each row's {} iterations ({} operations{}) were captured once into a CUDA "
                             "graph, launched once untimed, then {} times timed, each launch synchronised before "
                             "the next (nccl-tests launches all, then synchronises once); a sample is one launch's "
                             "time per operation, so percentiles, lateness and spikes are over the {} launches (a "
                             "spike's 'iteration' is a launch); inside the graph -z 1 orders each operation after "
                             "the one before, with no host between them; the check ran without the graph",
                             opts.cuda_graph, opts.iters, opts.iters * opts.agg_iters,
                             opts.concurrent > 1 ? fmt::format(" on each of {} communicators", opts.concurrent) : "",
                             opts.cuda_graph, opts.cuda_graph));
      if (opts.agg_iters > 1) add_note(result.notes, agg_note(group.backend(), opts.agg_iters, opts.blocking));
      else if (opts.blocking)
        add_note(result.notes, "-z 1 with -m 1: every iteration (one operation) is waited for at its end, as always "
                               "(each is a sample, as nccl-tests' -z 1 times them); -z changes what -m > 1 runs");
      if (c == comm::Collective::kAlltoallv)
        add_note(result.notes,
                 fmt::format("alltoallv: parts {} (--split-sizes); size is what each rank sends in all, busbw uses "
                             "alltoall's (n-1)/n",
                             opts.vsplit.text));
      if (c == comm::Collective::kAllgatherv || c == comm::Collective::kReduceScatterV)
        add_note(result.notes,
                 fmt::format("{}: each rank's part {} (--split-sizes); size is the {} buffer, busbw uses {}'s "
                             "(n-1)/n",
                             comm::to_string(c), opts.vsplit.text,
                             c == comm::Collective::kAllgatherv ? "gathered" : "input",
                             c == comm::Collective::kAllgatherv ? "allgather" : "reduce_scatter"));
      if (opts.topology.nodes() > 1)
        add_note(result.notes,
                 link_gbs > 0
                     ? fmt::format("the copy ceiling is a plain copy in each rank's own memory; rows whose ranks span "
                                   "nodes are also read against the link ceiling, a raw TCP stream from each node's "
                                   "first rank to the next node's, all at once: {:.3f} GB/s (the links' median)",
                                   link_gbs)
                     : fmt::format("the copy ceiling is a plain copy in each rank's own memory: between nodes the "
                                   "network is the limit, and the link ceiling could not be measured ({})",
                                   link_why.empty() ? "no address toward the other nodes" : link_why));
      if (!out_of_place && !in_place) continue;

      // A barrier has no message: one row, of 0 bytes.
      const std::vector<std::uint64_t> row_sizes =
          c == comm::Collective::kBarrier ? std::vector<std::uint64_t>{0} : sizes;
      std::vector<CollArgs> row_args;
      for (const auto bytes_requested : row_sizes)
        row_args.push_back(args_for(group, opts, def, dev, bytes_requested, result.seed));
      // Buffers for every size at once, shared by every size.
      std::optional<Arena> oop_arena, ip_arena;
      // Two byte buffers for the copy ceiling, sized for the largest message
      // up to 64 MiB: a larger message's ceiling is a 64 MiB copy's (memory
      // bandwidth long before that size), so a sweep to 8 GiB does not need
      // 16 GiB more per rank.
      constexpr std::int64_t kCopyCap = 64 << 20;
      const auto largest_bytes = std::min<std::int64_t>(
          kCopyCap, static_cast<std::int64_t>(c == comm::Collective::kBarrier ? 0 : sizes.back()));
      const auto byte_options = at::TensorOptions().dtype(at::kByte).device(dev);
      const at::Tensor copy_src = at::ones({std::max<std::int64_t>(largest_bytes, 1)}, byte_options);
      at::Tensor copy_dst = at::zeros({std::max<std::int64_t>(largest_bytes, 1)}, byte_options);
      if (out_of_place) oop_arena.emplace(def, row_args, false);
      if (in_place) ip_arena.emplace(def, row_args, true);
      std::int64_t mine = 2 * std::max<std::int64_t>(largest_bytes, 1);  // the copy ceiling's
      for (const auto* a : {oop_arena ? &*oop_arena : nullptr, ip_arena ? &*ip_arena : nullptr})
        if (a != nullptr)
          for (const auto* t : {&a->in, &a->out})
            if (t->defined()) mine += t->numel() * static_cast<std::int64_t>(t->element_size());
      buffers_bytes = std::max(buffers_bytes, mine);
      for (std::size_t row = 0; row < row_sizes.size(); ++row) {
        const std::uint64_t bytes_requested = row_sizes[row];
        const CollArgs& args = row_args[row];
        // Each group's message (groups of different sizes split differently).
        std::vector<std::uint64_t> group_bytes;
        for (const auto& g : job.groups)
          group_bytes.push_back(static_cast<std::uint64_t>(
                                    count_for(def, opts, bytes_requested, split ? static_cast<int>(g.size()) : world.size())) *
                                elem);
        // This rank's copy of its group's message, once per size.
        const auto my_bytes = static_cast<std::int64_t>(
            std::min<std::uint64_t>(group_bytes[static_cast<std::size_t>(group_index(job, world.rank()))],
                                    static_cast<std::uint64_t>(largest_bytes)));
        const double copy_us = copy_time_us(copy_src, copy_dst, my_bytes, opts.iters, dev);
        const double copy_rate = copy_us > 0 ? static_cast<double>(my_bytes) / copy_us / 1e3 : 0;  // GB/s
        std::vector<report::CommTiming> oop, ip;
        if (out_of_place) oop = measure(def, args, false, opts, clock, *oop_arena, job, group_bytes, copy_rate);
        if (in_place) ip = measure(def, args, true, opts, clock, *ip_arena, job, group_bytes, copy_rate);
        if (load) {
          auto beside = [&](bool inp, const Arena& arena) {
            return [&, inp](int n, std::pair<double, double>* w) {
              CommBenchOptions more = opts;
              more.iters = n;
              return measure(def, args, inp, more, clock, arena, job, group_bytes, copy_rate, w);
            };
          };
          const int agg = static_cast<int>(opts.agg_iters);
          if (out_of_place) with_compute(*load, oop, beside(false, *oop_arena), job.world, job.groups, opts.iters, agg);
          if (in_place) with_compute(*load, ip, beside(true, *ip_arena), job.world, job.groups, opts.iters, agg);
        }
        for (std::size_t g = 0; g < job.groups.size(); ++g) {
          const int nranks = split ? static_cast<int>(job.groups[g].size()) : world.size();
          const std::int64_t count = count_for(def, opts, bytes_requested, nranks);
          report::CommRecord rec;
          rec.cycle = cycle;
          if (split) {
            rec.group = static_cast<int>(g);
            rec.group_ranks = job.groups[g];
          }
          rec.collective = comm::to_string(c);
          rec.bytes = group_bytes[g];
          rec.count = static_cast<std::uint64_t>(def.splits ? count / nranks : count);
          rec.dtype = c == comm::Collective::kBarrier ? "none" : comm::to_string(opts.dtype);
          rec.op = comm::is_reduction(c) ? comm::to_string(opts.op) : "none";
          rec.root = (c == comm::Collective::kBroadcast || c == comm::Collective::kReduce ||
                      c == comm::Collective::kGather || c == comm::Collective::kScatter)
                         ? opts.root
                         : -1;
          rec.percentiles = opts.percentiles;
          if (out_of_place) rec.out_of_place = oop[g];
          if (in_place) rec.in_place = ip[g];
          if (link_gbs > 0 && spans_nodes(job.groups[g]))
            for (auto* t : {&rec.out_of_place, &rec.in_place})
              if (t->ran) {
                t->link_gbs = link_gbs;
                t->of_link = t->busbw_gbs / link_gbs;
              }
          if (on_record) on_record(rec, result);
          result.records.push_back(std::move(rec));
        }
      }
    }
  }
  if (meter) {
    const auto m = meter->read();
    std::vector<double> mine{static_cast<double>(buffers_bytes), static_cast<double>(m.peak),
                             static_cast<double>(m.reserved_peak)};
    at::Tensor local = at::from_blob(mine.data(), {3}, at::kDouble).clone();
    at::Tensor all = at::zeros({3 * world.size()}, at::kDouble);
    world.allgather(local, all)->wait(world.timeout());
    const auto* p = all.data_ptr<double>();
    for (int r = 0; r < world.size(); ++r)
      result.memory.push_back({static_cast<std::int64_t>(p[3 * r]), static_cast<std::int64_t>(p[3 * r + 1]),
                               static_cast<std::int64_t>(p[3 * r + 2])});
  }
  return result;
}

}  // namespace dtbench::bench
