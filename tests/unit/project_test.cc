// `dtbench project` on literal inputs: the ring and tree allreduce formulas,
// measured levels (fit and interpolation), bucket formation, the schedule
// (one bucket, many, buckets ready after backward, zero latency, no
// overlap), the projection, and the checks on bad inputs (the profile read
// from a ddp report: project_profile_test.cc).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/units.h"
#include "project/collective_model.h"
#include "project/comm_fit.h"
#include "project/projection.h"
#include "project/schedule.h"

namespace dtbench::project {
namespace {

Network flat(double bw, double latency) {
  Network n;
  n.ranks_per_node = 1;
  n.inter.bus_bw = bw;
  n.inter.latency_s = latency;
  n.intra.bus_bw = 1e12;
  return n;
}

TEST(ProjectUnits, Bandwidths) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("100Gbit/s", "x"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100Gb/s", "x"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("10Gbps", "x"), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("4x100Gbit/s", "x"), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12.5GB/s", "x"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("800MB/s", "x"), 800e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1000Mbit", "x"), 125e6);
  EXPECT_THROW(parse_bandwidth("100", "x"), UsageError);        // no unit
  EXPECT_THROW(parse_bandwidth("100Gfoo/s", "x"), UsageError);  // unknown unit
  EXPECT_THROW(parse_bandwidth("-1GB/s", "x"), UsageError);
  EXPECT_THROW(parse_bandwidth("0GB/s", "x"), UsageError);
  EXPECT_THROW(parse_bandwidth("0x10GB/s", "x"), UsageError);
}

TEST(ProjectUnits, Seconds) {
  EXPECT_DOUBLE_EQ(parse_seconds("5us", "x"), 5e-6);
  EXPECT_DOUBLE_EQ(parse_seconds("1.5ms", "x"), 1.5e-3);
  EXPECT_DOUBLE_EQ(parse_seconds("800ns", "x"), 800e-9);
  EXPECT_DOUBLE_EQ(parse_seconds("0", "x"), 0);
  EXPECT_THROW(parse_seconds("5", "x"), UsageError);  // no unit
  EXPECT_THROW(parse_seconds("5h", "x"), UsageError);
  EXPECT_THROW(parse_seconds("-1us", "x"), UsageError);
}

TEST(CollectiveModel, RingOnOneLevel) {
  const auto net = flat(1e9, 10e-6);
  EXPECT_EQ(ring_allreduce_seconds(net, 1e6, 1), 0);
  // 2 ranks: 2 steps across nodes, each rank moves 2(2-1)/2 = 1x the bytes.
  EXPECT_NEAR(ring_allreduce_seconds(net, 1e6, 2), 2 * 10e-6 + 1e6 / 1e9, 1e-12);
  // 4 ranks: 6 steps, 1.5x the bytes.
  EXPECT_NEAR(ring_allreduce_seconds(net, 1e6, 4), 6 * 10e-6 + 1.5e6 / 1e9, 1e-12);
  // Zero latency: bandwidth only.
  EXPECT_NEAR(ring_allreduce_seconds(flat(1e9, 0), 4e6, 8), 2.0 * 7 / 8 * 4e6 / 1e9, 1e-12);
}

TEST(CollectiveModel, RingAcrossTwoLevels) {
  Network net;
  net.ranks_per_node = 4;
  net.intra = {1e-6, 100e9, {}, "", {}};
  net.inter = {10e-6, 10e9, {}, "", {}};
  net.base_latency_s = 5e-6;
  // 8 ranks on 2 nodes: 14 steps, 2 of them between nodes; the NICs are the bottleneck.
  EXPECT_NEAR(ring_allreduce_seconds(net, 1e6, 8), 5e-6 + 12 * 1e-6 + 2 * 10e-6 + 2.0 * 7 / 8 * 1e6 / 10e9, 1e-12);
  // Inside one node only the intra level counts.
  EXPECT_NEAR(ring_allreduce_seconds(net, 1e6, 4), 5e-6 + 6 * 1e-6 + 1.5e6 / 100e9, 1e-12);
  EXPECT_EQ(nodes_for(net, 8), 2);
  EXPECT_EQ(nodes_for(net, 9), 3);
  EXPECT_EQ(nodes_for(net, 3), 1);
}

TEST(CollectiveModel, TreeAndAuto) {
  Network net;
  net.ranks_per_node = 4;
  net.intra = {1e-6, 100e9, {}, "", {}};
  net.inter = {10e-6, 10e9, {}, "", {}};
  // 32 ranks on 8 nodes: 2((4-1) intra + log2(8) = 3 inter) steps; bytes twice at 0.9 of the bus bandwidth.
  EXPECT_NEAR(tree_allreduce_seconds(net, 1e6, 32), 2 * (3 * 1e-6 + 3 * 10e-6) + 2 * 1e6 / 10e9 / 0.9, 1e-12);
  // Small messages on many nodes: the tree's log-depth latency wins; large ones: the ring's bandwidth.
  EXPECT_EQ(allreduce_cost(net, 1024, 4096, Algo::kAuto).algo, Algo::kTree);
  EXPECT_EQ(allreduce_cost(net, 256e6, 8, Algo::kAuto).algo, Algo::kRing);
  EXPECT_EQ(allreduce_cost(net, 256e6, 8, Algo::kTree).algo, Algo::kTree);
  EXPECT_THROW(parse_algo("butterfly"), UsageError);
}

TEST(CommFit, RecoversLatencyAndBandwidth) {
  // t = 2 alpha + S / B at 2 ranks (bus factor 1), alpha = 20 us, B = 1 GB/s.
  std::vector<MeasuredPoint> pts;
  for (double s : {1e3, 1e4, 1e5, 1e6, 1e7}) pts.push_back({s, 2 * 20e-6 + s / 1e9});
  const auto l = fit_level(pts, 2, "t");
  EXPECT_NEAR(l.latency_s, (2 * 20e-6 + 1e3 / 1e9) / 2, 1e-12);
  EXPECT_NEAR(l.seconds_per_byte(1e7), 1e-9, 1e-12);
  // Reproduces the measured times at the measured world size.
  Network net;
  net.ranks_per_node = 2;
  net.intra = l;
  for (const auto& p : pts) EXPECT_NEAR(ring_allreduce_seconds(net, p.bytes, 2), p.seconds, 1e-12);
  // Flat beyond the ends, linear in log(bytes) between points.
  EXPECT_EQ(l.seconds_per_byte(1e9), l.seconds_per_byte(1e7));
  Level c;
  c.curve = {{1e3, 0}, {1e5, 2e-9}};
  EXPECT_NEAR(c.seconds_per_byte(1e4), 1e-9, 1e-15);
}

TEST(CommFit, RejectsWhatCannotBeFitted) {
  EXPECT_THROW(fit_level({{1e3, 1e-5}, {1e4, 2e-5}}, 1, "t"), UsageError);  // one rank
  EXPECT_THROW(fit_level({{1e3, 1e-5}}, 2, "t"), UsageError);               // one size
  EXPECT_THROW(fit_level({{1e3, 1e-5}, {1e4, -1}}, 2, "t"), UsageError);    // negative time
}

TEST(Buckets, FormedAtTheCapsInReadyOrder) {
  BucketOptions o;
  o.first_cap_bytes = 10;
  o.cap_bytes = 25;
  // Given out of order: sorted by ready time.
  const auto b = make_buckets({{6, 0.2}, {5, 0.1}, {20, 0.3}, {10, 0.4}, {3, 0.5}}, o);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].bytes, 11);  // 5 + 6 >= 10
  EXPECT_EQ(b[0].ready_s, 0.2);
  EXPECT_EQ(b[1].bytes, 30);  // 20 + 10 >= 25
  EXPECT_EQ(b[1].ready_s, 0.4);
  EXPECT_EQ(b[2].bytes, 3);   // what is left
  const auto pieces = split_items({{4, 1.0}, {2, 3.0}}, 1);
  ASSERT_EQ(pieces.size(), 6u);
  EXPECT_DOUBLE_EQ(pieces[0].ready_s, 0.25);
  EXPECT_DOUBLE_EQ(pieces[3].ready_s, 1.0);
  EXPECT_DOUBLE_EQ(pieces[4].ready_s, 2.0);
  EXPECT_DOUBLE_EQ(pieces[5].ready_s, 3.0);
}

TEST(Schedule, OneBucketManyAndLate) {
  const auto cost = [](double bytes) { return bytes * 1e-3; };  // 1 ms per byte
  ScheduleOptions o;
  o.backward_s = 0.010;
  // One bucket ready at the end of backward: all of it exposed.
  auto s = run_schedule({{5, 0.010}}, cost, o);
  EXPECT_NEAR(s.exposed_s, 0.005, 1e-12);
  // Many buckets hidden behind backward except the queue's tail.
  s = run_schedule({{2, 0.001}, {2, 0.002}, {2, 0.009}}, cost, o);
  EXPECT_NEAR(s.start_s[1], 0.003, 1e-12);  // waits for the channel
  EXPECT_NEAR(s.done_s[2], 0.011, 1e-12);
  EXPECT_NEAR(s.exposed_s, 0.001, 1e-12);
  EXPECT_NEAR(s.comm_s, 0.006, 1e-12);
  // Ready after backward ended (a slow hook): exposed counts from backward's end.
  s = run_schedule({{1, 0.012}}, cost, o);
  EXPECT_NEAR(s.exposed_s, 0.003, 1e-12);
  // Zero cost: nothing exposed.
  s = run_schedule({{5, 0.001}, {5, 0.010}}, [](double) { return 0.0; }, o);
  EXPECT_EQ(s.exposed_s, 0);
  // Without overlap every bucket starts after backward.
  o.overlap = false;
  s = run_schedule({{2, 0.001}, {2, 0.002}}, cost, o);
  EXPECT_NEAR(s.start_s[0], 0.010, 1e-12);
  EXPECT_NEAR(s.exposed_s, 0.004, 1e-12);
  EXPECT_EQ(run_schedule({}, cost, o).exposed_s, 0);
}

TEST(Schedule, CpuContentionSharesTheCores) {
  const auto cost = [](double bytes) { return bytes * 1e-3; };  // 1 ms per byte
  ScheduleOptions o;
  o.backward_s = 0.010;
  o.node_cores = 2;       // two ranks of one thread on two cores
  o.compute_cores = 2;
  o.profiled_cores = 1;
  // Each rank's allreduce keeps one core busy: 4 threads on 2 cores, all at
  // half speed while it runs. 4 ms of allreduce takes 8 ms, backward gets
  // 4 ms done meanwhile, then 6 ms alone: ends at 14 ms (the work, 10 + 4,
  // serialised), the allreduce hidden.
  o.comm_cores = [](double) { return 2.0; };
  auto s = run_schedule({{4, 0.0}}, cost, o);
  EXPECT_NEAR(s.done_s[0], 0.008, 1e-12);
  EXPECT_NEAR(s.backward_end_s, 0.014, 1e-12);
  EXPECT_EQ(s.exposed_s, 0);
  EXPECT_NEAR(s.comm_s, 0.004, 1e-12);  // uncontended cost, as before
  // Half a core each: demand 3, everything at 2/3 speed: done at 6 ms, then
  // the 6 ms of backward left run alone: ends at 12 ms.
  o.comm_cores = [](double) { return 1.0; };
  s = run_schedule({{4, 0.0}}, cost, o);
  EXPECT_NEAR(s.done_s[0], 0.006, 1e-12);
  EXPECT_NEAR(s.backward_end_s, 0.012, 1e-12);
  // A bucket ready at backward's end shares nothing: as without contention.
  s = run_schedule({{4, 0.010}}, cost, o);
  EXPECT_NEAR(s.backward_end_s, 0.010, 1e-12);
  EXPECT_NEAR(s.exposed_s, 0.004, 1e-12);
  // Ready at half of backward's progress, which contention delays in wall time:
  // backward alone to 5 ms, then 4 ms of allreduce at 2/3 speed (done at
  // 11 ms, backward at 9 ms of progress), 1 ms alone: ends at 12 ms.
  s = run_schedule({{4, 0.005}}, cost, o);
  EXPECT_NEAR(s.start_s[0], 0.005, 1e-12);
  EXPECT_NEAR(s.done_s[0], 0.011, 1e-12);
  EXPECT_NEAR(s.backward_end_s, 0.012, 1e-12);
  // The ranks' threads alone ask for twice the cores: backward at half speed.
  o.compute_cores = 4;
  s = run_schedule({}, cost, o);
  EXPECT_NEAR(s.backward_end_s, 0.020, 1e-12);
  EXPECT_NEAR(compute_speed(o, 4), 0.5, 1e-12);
  // Cores to spare: nothing changes.
  o.node_cores = 16;
  o.compute_cores = 2;
  s = run_schedule({{4, 0.0}}, cost, o);
  EXPECT_NEAR(s.done_s[0], 0.004, 1e-12);
  EXPECT_NEAR(s.backward_end_s, 0.010, 1e-12);
}

ComputeProfile literal_profile() {
  ComputeProfile p;
  p.source = "literal";
  p.batch_per_rank = 32;
  p.forward_s = 0.030;
  p.backward_s = 0.060;
  p.optimizer_s = 0.005;
  p.fixed_s = 0.002;
  p.grads = {{4e6, 0.020}, {40e6, 0.060}};
  p.grads_are_buckets = true;
  return p;
}

TEST(Projection, IterationExposedAndEfficiency) {
  const auto p = literal_profile();
  ProjectOptions o;
  o.net = flat(1e9, 0);  // 1 GB/s, one rank per node
  o.algo = Algo::kRing;
  o.world_sizes = {1, 2};
  const auto rows = project(p, o);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NEAR(rows[0].iteration_s, 0.097, 1e-12);  // compute + fixed, nothing to reduce
  EXPECT_EQ(rows[0].efficiency, 1.0);
  // 2 ranks: bucket 0 (4 ms) hidden, bucket 1 (40 ms) starts at the end of backward.
  EXPECT_NEAR(rows[1].exposed_s, 0.040, 1e-12);
  EXPECT_NEAR(rows[1].iteration_s, 0.137, 1e-12);
  EXPECT_NEAR(rows[1].efficiency, 0.097 / 0.137, 1e-12);
  EXPECT_NEAR(rows[1].examples_per_s, 64 / 0.137, 1e-9);
  // fp16 wire format halves the bytes.
  o.wire_ratio = 0.5;
  EXPECT_NEAR(project(p, o)[1].exposed_s, 0.020, 1e-12);
  // Re-bucketed at 8 MB: the big bucket's bytes spread between 20 and 60 ms,
  // most of it now reduced while backward runs.
  o.wire_ratio = 1;
  BucketOptions caps;
  caps.first_cap_bytes = 8e6;
  caps.cap_bytes = 8e6;
  o.rebucket = caps;
  EXPECT_LT(project(p, o)[1].exposed_s, 0.020);
  o.world_sizes = {0};
  EXPECT_THROW(project(p, o), UsageError);
  // CPU contention needs the profile's threads and the level's cpu_util.
  o.rebucket.reset();
  o.world_sizes = {2};
  o.cores_per_node = 1;
  EXPECT_THROW(project(p, o), UsageError);  // threads unknown
  auto threaded = p;
  threaded.threads = 1;
  EXPECT_THROW(project(threaded, o), UsageError);  // no cpu_util measured
  // One core per node, one rank per node, one thread: each allreduce keeps
  // half a core busy. Bucket 0 (4 ms from 20 ms) runs at 2/3 speed beside
  // backward: 6 ms, backward 2 ms later; bucket 1 as before after it.
  o.net.inter.cpu_util = {{1e3, 0.5}, {1e9, 0.5}};
  const auto contended = project(threaded, o)[0];
  EXPECT_NEAR(contended.contention_s, 0.002, 1e-9);
  EXPECT_NEAR(contended.exposed_s, 0.040, 1e-9);
  EXPECT_NEAR(contended.iteration_s, 0.139, 1e-9);
  o.cores_per_node = 0;
  auto empty = p;
  empty.grads.clear();
  o.world_sizes = {2};
  EXPECT_THROW(project(empty, o), UsageError);
}

TEST(CommFit, LatencyGivesWayToBandwidthWhereTheTransferPassesTheSteps) {
  // 2 ranks: an allreduce takes 2 steps of 50 us, then bytes / (1 GB/s).
  std::vector<MeasuredPoint> pts;
  for (double b : {1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0}) pts.push_back({b, 2 * 50e-6 + b / 1e9});
  const auto l = fit_level(pts, 2, "t");
  const auto lb = latency_bandwidth(l, 2, "allreduce");
  EXPECT_EQ(lb.steps, 2);
  // 100 us of latency: 64 KiB's transfer (66 us) is under it, 256 KiB's (262 us) over.
  EXPECT_DOUBLE_EQ(lb.latency_bound_bytes, 65536.0);
  EXPECT_DOUBLE_EQ(lb.largest_bytes, 1048576.0);
  EXPECT_NEAR(lb.largest_bus_bw, 1e9, 0.01e9);
  // allgather on 4 ranks: 3 steps.
  EXPECT_EQ(latency_bandwidth(l, 4, "allgather").steps, 3);
  // Records of a comm run: in-place rows preferred, the ranks' mean times.
  std::vector<report::CommRecord> recs;
  for (const auto& p : pts) {
    report::CommRecord r;
    r.collective = "allreduce";
    r.bytes = static_cast<std::uint64_t>(p.bytes);
    r.in_place.ran = true;
    r.in_place.rank_us = {p.seconds * 1e6 - 1, p.seconds * 1e6 + 1};
    r.out_of_place.ran = true;
    r.out_of_place.rank_us = {1e6, 1e6};
    recs.push_back(r);
  }
  const auto fits = sweep_fits(recs, 2);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].placement, "in place");
  EXPECT_NEAR(fits[0].latency_s, (2 * 50e-6 + 1024 / 1e9) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(fits[0].lb.latency_bound_bytes, 65536.0);
  EXPECT_TRUE(sweep_fits(recs, 1).empty());  // one rank: nothing to fit
  // Sizes that repeat (rounded to the same element count) count once: one
  // size repeated is no sweep (no line, and no exception on rank 0 alone).
  auto twice = recs;
  twice.insert(twice.end(), recs.begin(), recs.end());
  ASSERT_EQ(sweep_fits(twice, 2).size(), 1u);
  std::vector<report::CommRecord> same(3, recs.front());
  EXPECT_TRUE(sweep_fits(same, 2).empty());
}

}  // namespace
}  // namespace dtbench::project
