#include "project/projection.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

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

  auto one = [&](int world) {
    if (world < 1) throw UsageError(fmt::format("--world-sizes: {} is not a rank count", world));
    ProjectionRow row;
    row.world_size = world;
    row.nodes = nodes_for(opts.net, world);
    row.buckets = static_cast<int>(buckets.size());
    row.largest_bucket_bytes = largest;
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
    for (const auto& [w, t] : profile.measured)
      if (w == world) row.measured_s = t;
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
