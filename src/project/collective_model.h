#pragma once
// The cost of one allreduce on a two-level network (ranks inside a node,
// nodes on a fabric), for `dtbench project`. Ring and tree as NCCL models
// them (src/graph/tuning.cc: a fixed latency per collective, a latency per
// step inside a node and across nodes, a bus bandwidth), derived in
// docs/metrics.md "Projection". Pure functions; torch-free.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtbench::project {

// One level of the network: what one step of a collective costs in latency,
// and how fast bytes move. The bandwidth is either one figure or a curve
// measured by `dtbench comm` (seconds per byte against message size).
struct Level {
  double latency_s = 0;          // per step of the collective, seconds
  double bus_bw = 0;             // bytes/s of bus bandwidth; used when `curve` is empty
  // Measured: (message bytes, seconds per bus byte) ascending in bytes,
  // interpolated linearly in log(bytes), held flat beyond both ends.
  std::vector<std::pair<double, double>> curve;
  std::string source;            // where the figures came from, for the report
  // Measured (`dtbench comm`'s cpu_util): (message bytes, cores each rank
  // keeps busy while its allreduce runs) ascending in bytes, interpolated as
  // `curve`; for the CPU contention term. Empty: not measured.
  std::vector<std::pair<double, double>> cpu_util;

  // Seconds per bus byte at this message size.
  double seconds_per_byte(double bytes) const;
};

// y at x on a curve of (x, y) points ascending in x: linear in log(x)
// between points, held flat beyond both ends; 0 for an empty curve.
double log_interpolate(const std::vector<std::pair<double, double>>& curve, double x);

// The sharded strategies' collectives.
enum class ShardCollective { kAllGather, kReduceScatter };

// A level's own all_gather or reduce_scatter figures, where a `dtbench comm`
// sweep of that collective measured them; absent, the level's (allreduce)
// figures serve (nccl-tests' bus bandwidth is one figure for all three).
struct ShardLevels {
  std::optional<Level> intra, inter;
};

struct Network {
  int ranks_per_node = 1;     // ranks that share a node (GPUs per machine)
  Level intra;                // between the ranks of one node
  Level inter;                // between nodes: bus_bw = all NICs of a node together
  double base_latency_s = 0;  // once per collective (kernel launch, protocol set-up)
  ShardLevels all_gather, reduce_scatter;
};

enum class Algo { kRing, kTree, kAuto };
const char* algo_name(Algo a);
// "ring", "tree" or "auto"; throws UsageError naming the valid ones.
Algo parse_algo(const std::string& text);

struct AllreduceCost {
  double seconds = 0;
  Algo algo = Algo::kRing;  // the one costed (ring or tree)
};

// Nodes a world of `world` ranks spans: ceil(world / ranks_per_node).
int nodes_for(const Network& net, int world);

// Ring allreduce: 2(N-1) steps, 2(k-1) of them across nodes (k nodes);
// every rank sends and receives 2(N-1)/N of the bytes through the slowest
// level. Zero for one rank.
double ring_allreduce_seconds(const Network& net, double bytes, int world);
// Tree allreduce (NCCL's double binary tree between nodes, chains inside):
// 2((N/k - 1) + ceil(log2 k)) steps; the bytes cross the slowest level
// twice at 0.9 of its bus bandwidth. Zero for one rank.
double tree_allreduce_seconds(const Network& net, double bytes, int world);
// Ring all_gather or reduce_scatter of a tensor of `bytes` (the whole,
// unsharded size; each rank holds or ends with bytes / N): N-1 steps, k-1 of
// them across nodes; every rank sends (N-1)/N of the bytes through the
// slowest level, each level's figures those of `c` where measured
// (Network::all_gather/reduce_scatter), else the level's. Zero for one rank.
double ring_shard_collective_seconds(const Network& net, double bytes, int world, ShardCollective c);
// `algo`, or with kAuto the cheaper of the two (as NCCL picks per call).
AllreduceCost allreduce_cost(const Network& net, double bytes, int world, Algo algo);

}  // namespace dtbench::project
