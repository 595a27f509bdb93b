#include "project/collective_model.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::project {

double log_interpolate(const std::vector<std::pair<double, double>>& curve, double x) {
  if (curve.empty()) return 0;
  if (x <= curve.front().first) return curve.front().second;
  if (x >= curve.back().first) return curve.back().second;
  const auto hi = std::lower_bound(curve.begin(), curve.end(), x,
                                   [](const std::pair<double, double>& p, double b) { return p.first < b; });
  const auto lo = hi - 1;
  const double t = (std::log(x) - std::log(lo->first)) / (std::log(hi->first) - std::log(lo->first));
  return lo->second + t * (hi->second - lo->second);
}

double Level::seconds_per_byte(double bytes) const {
  if (curve.empty()) return bus_bw > 0 ? 1.0 / bus_bw : 0.0;
  return log_interpolate(curve, bytes);
}

const char* algo_name(Algo a) {
  switch (a) {
    case Algo::kRing: return "ring";
    case Algo::kTree: return "tree";
    case Algo::kAuto: return "auto";
  }
  return "?";
}

Algo parse_algo(const std::string& text) {
  if (text == "ring") return Algo::kRing;
  if (text == "tree") return Algo::kTree;
  if (text == "auto") return Algo::kAuto;
  throw UsageError(fmt::format("--algo: '{}' is not an algorithm (use ring, tree or auto)", text));
}

int nodes_for(const Network& net, int world) {
  const int ppn = std::max(1, net.ranks_per_node);
  return (world + ppn - 1) / ppn;
}

namespace {

// Seconds per bus byte of the slowest level the bytes cross.
double bottleneck(const Level& intra_level, const Level& inter_level, double bytes, int nodes) {
  const double intra = intra_level.seconds_per_byte(bytes);
  return nodes > 1 ? std::max(intra, inter_level.seconds_per_byte(bytes)) : intra;
}

double bottleneck(const Network& net, double bytes, int nodes) {
  return bottleneck(net.intra, net.inter, bytes, nodes);
}

}  // namespace

double ring_allreduce_seconds(const Network& net, double bytes, int world) {
  if (world <= 1) return 0;
  const int k = nodes_for(net, world);
  const double steps = 2.0 * (world - 1);
  const double inter_steps = 2.0 * (k - 1);
  const double latency =
      net.base_latency_s + (steps - inter_steps) * net.intra.latency_s + inter_steps * net.inter.latency_s;
  const double bus_bytes = bytes * 2.0 * (world - 1) / world;
  return latency + bus_bytes * bottleneck(net, bytes, k);
}

double ring_shard_collective_seconds(const Network& net, double bytes, int world, ShardCollective c) {
  if (world <= 1) return 0;
  const auto& own = c == ShardCollective::kAllGather ? net.all_gather : net.reduce_scatter;
  const Level& intra = own.intra ? *own.intra : net.intra;
  const Level& inter = own.inter ? *own.inter : net.inter;
  const int k = nodes_for(net, world);
  const double steps = world - 1.0;
  const double inter_steps = k - 1.0;
  const double latency = net.base_latency_s + (steps - inter_steps) * intra.latency_s + inter_steps * inter.latency_s;
  return latency + bytes * (world - 1.0) / world * bottleneck(intra, inter, bytes, k);
}

double tree_allreduce_seconds(const Network& net, double bytes, int world) {
  if (world <= 1) return 0;
  const int k = nodes_for(net, world);
  const int per_node = (world + k - 1) / k;
  const double depth = k > 1 ? std::ceil(std::log2(static_cast<double>(k))) : 0.0;
  const double latency =
      net.base_latency_s + 2.0 * ((per_node - 1) * net.intra.latency_s + depth * net.inter.latency_s);
  return latency + 2.0 * bytes * bottleneck(net, bytes, k) / 0.9;
}

AllreduceCost allreduce_cost(const Network& net, double bytes, int world, Algo algo) {
  const double ring = ring_allreduce_seconds(net, bytes, world);
  if (algo == Algo::kRing) return {ring, Algo::kRing};
  const double tree = tree_allreduce_seconds(net, bytes, world);
  if (algo == Algo::kTree) return {tree, Algo::kTree};
  return tree < ring ? AllreduceCost{tree, Algo::kTree} : AllreduceCost{ring, Algo::kRing};
}

}  // namespace dtbench::project
