#include "project/projection.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "project/sharded_time.h"

namespace dtbench::project {

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

std::vector<ProjectionRow> project(const ComputeProfile& profile, const ProjectOptions& opts) {
  double total = 0;
  for (const auto& g : profile.grads) total += g.bytes;
  if (!(total > 0)) throw UsageError(fmt::format("{}: the profile has no gradient bytes", profile.source));
  const auto buckets = projection_buckets(profile, opts);
  double largest = 0;
  for (const auto& b : buckets) largest = std::max(largest, b.bytes);

  const Sharding strategy = opts.strategy;
  if (strategy != Sharding::kDdp) {
    if (opts.cores_per_node > 0)
      throw UsageError(fmt::format("--cores-per-node: CPU contention is modelled for ddp only, not {}",
                                   sharding_name(strategy)));
    if (opts.wire_ratio != 1.0)
      throw UsageError(fmt::format("--compression: {} reduce-scatters float32 gradients (dtbench ddp refuses "
                                   "compression with the sharded strategies)", sharding_name(strategy)));
    if (strategy == Sharding::kFsdp && profile.units.empty())
      throw UsageError(fmt::format("{}: no FSDP units known for this profile; project fsdp with --model and a "
                                   "decoder preset (gpt2…, llama3…: `dtbench models`)", profile.source));
  }
  const double psi = profile.parameters > 0 ? profile.parameters : total / 4;
  double largest_unit = 0;
  for (const auto& u : profile.units) largest_unit = std::max(largest_unit, u.param_elements);

  auto sharded_row = [&](ProjectionRow& row, int world) {
    const auto cost = [&](double bytes) { return ring_shard_collective_seconds(opts.net, bytes, world); };
    const auto t = strategy == Sharding::kFsdp
                       ? fsdp_time(profile, profile.units, cost, world, opts.memory.reshard_after_forward,
                                   opts.memory.param_bytes, 4)
                       : zero_time(strategy, profile, buckets, cost, world, opts.overlap);
    row.comm_s = t.comm_s;
    row.exposed_s = world > 1 ? t.exposed_s : 0.0;
    row.iteration_s = t.iteration_s;
    row.collectives = t.collectives;
    row.algo = "ring";
    if (strategy == Sharding::kFsdp) row.buckets = static_cast<int>(profile.units.size());
  };

  auto one = [&](int world) {
    if (world < 1) throw UsageError(fmt::format("--world-sizes: {} is not a rank count", world));
    ProjectionRow row;
    row.strategy = sharding_name(strategy);
    row.world_size = world;
    row.nodes = nodes_for(opts.net, world);
    row.buckets = static_cast<int>(buckets.size());
    row.largest_bucket_bytes = largest;
    row.activations_known = profile.activation_bytes >= 0;
    row.memory = memory_per_rank(strategy, psi, largest_unit, world, opts.memory,
                                 row.activations_known ? profile.activation_bytes : 0.0);
    if (opts.memory_limit > 0) {
      row.fits = row.memory.total() <= opts.memory_limit;
      if (row.activations_known) row.largest_batch = largest_batch(row.memory, profile.batch_per_rank, opts.memory_limit);
    }
    for (const auto& [w, t] : profile.measured)
      if (w == world) row.measured_s = t;
    if (strategy != Sharding::kDdp) {
      sharded_row(row, world);
      row.examples_per_s = row.iteration_s > 0 ? static_cast<double>(world) *
                                                     static_cast<double>(profile.batch_per_rank) / row.iteration_s
                                               : 0;
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
    row.examples_per_s =
        row.iteration_s > 0 ? static_cast<double>(world) * static_cast<double>(profile.batch_per_rank) / row.iteration_s : 0;
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
