#include "project/projection.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "project/horovod_time.h"
#include "project/sharded_time.h"

namespace dtbench::project {

bool measured_as(Strategy s, const std::string& reducer) {
  if (s == Strategy::kDdp)
    return reducer != "none" && reducer != "horovod" && reducer != "zero1" && reducer != "zero2" && reducer != "fsdp";
  return reducer == strategy_name(s);
}

std::vector<Bucket> projection_buckets(const ComputeProfile& profile, const ProjectOptions& opts) {
  if (profile.grads_are_buckets && !opts.rebucket) {
    std::vector<Bucket> out;
    for (const auto& g : profile.grads) out.push_back({g.bytes, g.ready_s});
    std::stable_sort(out.begin(), out.end(), [](const Bucket& a, const Bucket& b) { return a.ready_s < b.ready_s; });
    return out;
  }
  const BucketOptions caps = opts.rebucket.value_or(profile.buckets);
  // Measured buckets re-cut: their gradients taken as arriving evenly
  // between one bucket's ready mark and the next, in 256 KiB pieces.
  const auto items = profile.grads_are_buckets ? split_items(profile.grads, 256.0 * 1024) : profile.grads;
  return make_buckets(items, caps);
}

std::vector<ProjectionRow> project_data_parallel(const ComputeProfile& profile, const ProjectOptions& opts) {
  double total = 0;
  for (const auto& g : profile.grads) total += g.bytes;
  if (!(total > 0)) throw UsageError(fmt::format("{}: the profile has no gradient bytes", profile.source));
  const auto buckets = projection_buckets(profile, opts);
  double largest = 0, live_pair = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    largest = std::max(largest, buckets[i].bytes);
    live_pair = std::max(live_pair, buckets[i].bytes + (i > 0 ? buckets[i - 1].bytes : 0.0));
  }

  const Strategy strategy = opts.strategy;
  if (strategy != Strategy::kDdp) {
    if (opts.cores_per_node > 0)
      throw UsageError(fmt::format("--cores-per-node: CPU contention is modelled for ddp only, not {}",
                                   strategy_name(strategy)));
    if (opts.wire_ratio != 1.0 && is_sharded(strategy))
      throw UsageError(fmt::format("--compression: {} reduce-scatters float32 gradients (dtbench ddp refuses "
                                   "compression with the sharded strategies)", strategy_name(strategy)));
    if (strategy == Strategy::kFsdp && profile.units.empty())
      throw UsageError(fmt::format("{}: no FSDP units known for this profile's model; fsdp is projected for the "
                                   "decoders (gpt2…, llama3…: `dtbench models`), by --model or a report of one",
                                   profile.source));
  }
  const double psi = profile.parameters > 0 ? profile.parameters : total / 4;
  MemoryOptions memory = opts.memory;
  if (!(memory.bucket_cap_bytes > 0))
    memory.bucket_cap_bytes = opts.rebucket ? opts.rebucket->cap_bytes : profile.buckets.cap_bytes;
  if (!(memory.zero2_live_bucket_bytes > 0)) memory.zero2_live_bucket_bytes = live_pair;
  memory.fusion_buffer_bytes = opts.horovod.threshold_bytes;
  // Horovod's gradients one by one: measured buckets spread as for re-bucketing.
  const auto horovod_items =
      profile.grads_are_buckets ? split_items(profile.grads, 256.0 * 1024) : profile.grads;
  // units[0] is the root; the largest of the others is the block.
  FsdpUnitSizes units;
  if (!profile.units.empty()) units.root = profile.units[0].param_elements;
  for (std::size_t i = 1; i < profile.units.size(); ++i)
    units.block = std::max(units.block, profile.units[i].param_elements);

  // This strategy's own fixed cost and what it holds beyond the memory
  // formula: from its 1-rank row where a report gave one; else DDP's fixed
  // cost for ddp (none for the others) and the profile's activations.
  ComputeProfile own = profile;
  std::string fixed_from = "profile";
  if (strategy != Strategy::kDdp) {
    own.fixed_s = 0;
    fixed_from = "none";
  }
  double activations = profile.activation_bytes;
  std::string activations_from = activations >= 0 ? "profile" : "not known";
  const MeasuredRow* mine = nullptr;
  if (strategy != Strategy::kDdp)
    for (const auto& m : profile.one_rank)
      if (measured_as(strategy, m.reducer)) mine = &m;
  if (mine != nullptr) {
    const std::string from = fmt::format("1-rank {} row", mine->reducer);
    if (profile.baseline_s > 0) {
      own.fixed_s = std::max(0.0, mine->seconds - profile.baseline_s);
      fixed_from = from;
    }
    // Its activations: the peak less what backward holds beside them, where
    // the peak was backward's. A peak no higher than the step's moment (every
    // model state, the buffers kept, AdamW's temporaries) may be that
    // moment, which hides the activations: the profile's stay.
    const auto at_one = memory_per_rank(strategy, psi, units, 1, memory, 0);
    if (mine->peak_bytes > at_one.after_backward()) {
      activations = profile.rescale_calibrated(mine->peak_bytes - at_one.beside_activations());
      activations_from = from;
    } else if (mine->peak_bytes >= 0) {
      activations_from += fmt::format(" (the {} may have peaked in the optimizer's step, which hides its activations)", from);
    }
  }

  auto horovod_row = [&](ProjectionRow& row, int world) {
    const auto allreduce = [&](double bytes) {
      return allreduce_cost(opts.net, bytes * opts.wire_ratio, world, opts.algo).seconds;
    };
    // One cycle's agreement: the response cache's bits, a few bytes.
    const double negotiate = world > 1 ? allreduce(64) : 0.0;
    const auto t = horovod_time(own, horovod_items, allreduce, negotiate, opts.horovod);
    row.comm_s = t.comm_s;
    row.exposed_s = world > 1 ? t.exposed_s : 0.0;
    row.iteration_s = t.iteration_s;
    row.collectives = t.collectives;
    row.buckets = t.collectives;
    row.algo = algo_name(
        allreduce_cost(opts.net, std::min(total, opts.horovod.threshold_bytes) * opts.wire_ratio, world, opts.algo).algo);
  };

  auto sharded_row = [&](ProjectionRow& row, int world) {
    const auto gather = [&](double bytes) {
      return ring_shard_collective_seconds(opts.net, bytes, world, ShardCollective::kAllGather);
    };
    const auto reduce = [&](double bytes) {
      return opts.reduce_scatter_as_allreduce
                 ? allreduce_cost(opts.net, bytes, world, opts.algo).seconds
                 : ring_shard_collective_seconds(opts.net, bytes, world, ShardCollective::kReduceScatter);
    };
    const auto t = strategy == Strategy::kFsdp
                       ? fsdp_time(own, profile.units, gather, reduce, world, opts.memory.reshard_after_forward,
                                   opts.memory.param_bytes, 4)
                       : zero_time(strategy, own, buckets, gather, reduce, world, opts.overlap);
    row.comm_s = t.comm_s;
    row.exposed_s = world > 1 ? t.exposed_s : 0.0;
    row.iteration_s = t.iteration_s;
    row.collectives = t.collectives;
    row.algo = "ring";
    if (strategy == Strategy::kFsdp) row.buckets = static_cast<int>(profile.units.size());
  };

  auto one = [&](int world) {
    if (world < 1) throw UsageError(fmt::format("--world-sizes: {} is not a rank count", world));
    ProjectionRow row;
    row.strategy = strategy_name(strategy);
    row.world_size = world;
    row.dp = world;
    row.nodes = nodes_for(opts.net, world);
    row.buckets = static_cast<int>(buckets.size());
    row.largest_bucket_bytes = largest;
    row.activations_known = activations >= 0;
    row.activations_from = activations_from;
    row.fixed_s = own.fixed_s;
    row.fixed_from = fixed_from;
    row.memory = memory_per_rank(strategy, psi, units, world, memory, row.activations_known ? activations : 0.0);
    if (opts.memory_limit > 0) {
      row.fits = row.memory.total() <= opts.memory_limit;
      if (row.activations_known) row.largest_batch = largest_batch(row.memory, profile.batch_per_rank, opts.memory_limit);
    }
    for (const auto& m : profile.measured)
      if (m.world_size == world && m.tp == 1 && m.pp == 1 && m.recompute == "none" && measured_as(strategy, m.reducer)) {
        row.measured_s = m.seconds;
        if (m.peak_bytes >= 0) row.measured_peak_bytes = m.peak_bytes;
      }
    const auto rates = [&] {
      if (!(row.iteration_s > 0)) return;
      row.examples_per_s = static_cast<double>(world) * static_cast<double>(profile.batch_per_rank) / row.iteration_s;
      row.tokens_per_s_per_rank =
          static_cast<double>(profile.batch_per_rank * profile.tokens_per_example) / row.iteration_s;
    };
    if (strategy != Strategy::kDdp) {
      if (strategy == Strategy::kHorovod)
        horovod_row(row, world);
      else
        sharded_row(row, world);
      rates();
      return row;
    }
    row.collectives = row.buckets;
    row.algo = algo_name(allreduce_cost(opts.net, largest * opts.wire_ratio, world, opts.algo).algo);
    const auto cost = [&](double bytes) {
      return allreduce_cost(opts.net, bytes * opts.wire_ratio, world, opts.algo).seconds;
    };
    ScheduleOptions so;
    so.backward_s = profile.backward_s;
    so.overlap = opts.overlap;
    const Level& level = row.nodes > 1 ? opts.net.inter : opts.net.intra;
    if (opts.cores_per_node > 0) {
      const int local = std::min(world, opts.net.ranks_per_node);
      if (profile.threads < 1)
        throw UsageError(fmt::format("--cores-per-node: {} does not say how many threads per rank it ran with "
                                     "(with --model give --threads)", profile.source));
      if (world > 1 && level.cpu_util.empty())
        throw UsageError(fmt::format(
            "--cores-per-node: the network {} has no measured cpu_util (give --comm-{} REPORT: a `dtbench comm` "
            "allreduce sweep that records it)", row.nodes > 1 ? "between nodes" : "inside a node",
            row.nodes > 1 ? "inter" : "intra"));
      so.node_cores = opts.cores_per_node;
      so.compute_cores = static_cast<double>(local) * profile.threads;
      so.profiled_cores = profile.threads;
      so.comm_cores = [&level, local](double bytes) { return local * log_interpolate(level.cpu_util, bytes); };
    }
    const auto s = run_schedule(buckets, cost, so);
    row.comm_s = s.comm_s;
    row.exposed_s = world > 1 ? s.exposed_s : 0.0;
    // Forward and the optimizer slow down only when the ranks' threads alone
    // ask for more cores than the node has.
    const double others = (profile.forward_s + profile.optimizer_s) / compute_speed(so, so.compute_cores);
    row.iteration_s = others + s.backward_end_s + row.exposed_s + profile.fixed_s;
    // Never negative (every speed is at most 1); max() drops rounding residue.
    row.contention_s =
        std::max(0.0, (others - (profile.forward_s + profile.optimizer_s)) + (s.backward_end_s - profile.backward_s));
    rates();
    return row;
  };
  const double base = one(1).iteration_s;
  std::vector<ProjectionRow> rows;
  for (int w : opts.world_sizes) {
    auto row = one(w);
    row.efficiency = row.iteration_s > 0 ? base / row.iteration_s : 0;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace dtbench::project
