// Parameter-server pieces that need no processes: the RPC header, server
// addresses, the kvstore layout, exact expected values, bandwidth, reports.
#include <random>
#include <stdexcept>

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <sstream>

#include "bench/hybrid/embedding_table.h"
#include "bench/hybrid/hybrid_config.h"
#include "bench/kvstore/kv_config.h"
#include "bench/kvstore/layout.h"
#include "bench/kvstore/mxnet_resnet.h"
#include "core/error.h"
#include "report/hybrid_record.h"
#include "report/kvstore_record.h"
#include "core/net_route.h"
#include "rpc/transport.h"
#include "rpc/wire.h"

namespace dtbench {
namespace {

using namespace bench::kv;

TEST(RpcWire, RoundTripsEveryField) {
  rpc::Header h;
  h.id = 0x0123456789abcdefULL;
  h.op = 7;
  h.status = -3;
  h.from = 42;
  h.key = 1ULL << 40;
  h.arg0 = -5;
  h.arg1 = std::int64_t{1} << 50;
  h.text = "why\nnot";
  const auto d = rpc::decode(rpc::encode(h));
  EXPECT_EQ(d.id, h.id);
  EXPECT_EQ(d.op, h.op);
  EXPECT_EQ(d.status, h.status);
  EXPECT_EQ(d.from, h.from);
  EXPECT_EQ(d.key, h.key);
  EXPECT_EQ(d.arg0, h.arg0);
  EXPECT_EQ(d.arg1, h.arg1);
  EXPECT_EQ(d.text, h.text);
}

TEST(RpcWire, RejectsShortAndForeignHeaders) {
  EXPECT_THROW(rpc::decode("short"), CommError);
  auto bytes = rpc::encode(rpc::Header{});
  bytes[0] ^= 0x55;
  EXPECT_THROW(rpc::decode(bytes), CommError);
}

TEST(RpcTransport, EndpointsRoundTripAndPickByHost) {
  rpc::Endpoint e{net::host_identity(), {"shm://abc", "uv://127.0.0.1:1234"}};
  const auto d = rpc::decode_endpoint(rpc::encode_endpoint(e));
  EXPECT_EQ(d.host_id, e.host_id);
  EXPECT_EQ(d.urls, e.urls);
  rpc::TransportOptions o;
  o.transport = "uv";
  EXPECT_EQ(rpc::pick_url(e, o), "uv://127.0.0.1:1234");
  rpc::Endpoint remote{"other-host/boot", e.urls};
  o.transport = "auto";
  EXPECT_EQ(rpc::pick_url(remote, o), "uv://127.0.0.1:1234");  // never shm across hosts
  o.transport = "shm";
  EXPECT_THROW(rpc::pick_url(remote, o), UsageError);
  EXPECT_THROW(rpc::decode_endpoint(""), CommError);
  EXPECT_THROW(rpc::decode_endpoint("hostonly"), CommError);
}

TEST(RpcTransport, ValidatesNames) {
  rpc::TransportOptions o;
  o.transport = "carrier-pigeon";
  EXPECT_THROW(rpc::validate(o), UsageError);
  o.transport = "auto";
  o.channel = "ibv";
  EXPECT_THROW(rpc::validate(o), UsageError);
  o.channel = "basic";
  EXPECT_NO_THROW(rpc::validate(o));
  bool has_basic = false;
  for (const auto& c : rpc::components()) has_basic |= c.name == "basic" && c.viable;
  EXPECT_TRUE(has_basic);
}

std::vector<KvArray> resnet_like() {
  // A few big and many small arrays, like a CNN's gradients.
  std::vector<KvArray> a;
  for (std::size_t n : {2359296u, 1048576u, 2048000u, 589824u, 64u, 64u, 256u, 147456u, 9408u})
    a.push_back({"a" + std::to_string(a.size()), n});
  return a;
}

TEST(KvLayout, SplitsBigArraysAndBalancesTheRest) {
  const auto l = plan_layout(resnet_like(), 2, 1000000);
  // Three arrays at or above the bound are split in two; six go whole.
  EXPECT_EQ(l.keys.size(), 3u * 2 + 6);
  std::size_t total = 0;
  for (const auto& k : l.keys) total += k.numel;
  EXPECT_EQ(total, l.total_numel);
  EXPECT_EQ(std::accumulate(l.server_numel.begin(), l.server_numel.end(), std::size_t{0}), l.total_numel);
  // The best split of the whole arrays leaves 589824 vs 157248 + the split
  // halves: max/mean = 3317760/3101472 = 1.0697.
  EXPECT_NEAR(imbalance(l), 3317760.0 / 3101472.0, 1e-9);
  // Every element of every array is covered exactly once, in order.
  for (std::size_t a = 0; a < l.arrays.size(); ++a) {
    std::size_t next = 0;
    for (const auto& k : l.keys)
      if (k.array == static_cast<int>(a)) {
        EXPECT_EQ(k.offset, next);
        next += k.numel;
      }
    EXPECT_EQ(next, l.arrays[a].numel);
  }
}

TEST(KvLayout, OneServerKeepsArraysWhole) {
  const auto l = plan_layout(resnet_like(), 1, 1);
  EXPECT_EQ(l.keys.size(), 9u);
  EXPECT_DOUBLE_EQ(imbalance(l), 1.0);
}

TEST(KvLayout, RejectsBadInput) {
  EXPECT_THROW(plan_layout({}, 1, 10), UsageError);
  EXPECT_THROW(plan_layout({{"x", 0}}, 1, 10), UsageError);
  EXPECT_THROW(plan_layout({{"x", 5}}, 0, 10), UsageError);
  EXPECT_THROW(uniform_arrays(0, 16), UsageError);
  EXPECT_THROW(uniform_arrays(2, 6), UsageError);
  EXPECT_EQ(uniform_arrays(3, 64).size(), 3u);
  EXPECT_EQ(uniform_arrays(3, 64)[0].numel, 16u);
}

TEST(KvConfig, ExpectedValuesMatchABruteForceSum) {
  KvOptions o;
  o.workers = 3;
  o.replicas = 2;
  o.arrays = uniform_arrays(1, 64);
  const auto t = expected_sync(o, 4);
  for (std::size_t j = 0; j < 200; ++j) {
    float sum = 0;
    for (int w = 0; w < 3; ++w)
      for (int r = 0; r < 2; ++r) sum += push_value(w, r, 4, j);
    EXPECT_EQ(t.at(j), sum) << j;
  }
  o.sgd = true;
  const auto w1 = expected_sync(o, 1);
  const auto end = expected_final(o, 2);
  for (std::size_t j = 0; j < 200; ++j) {
    float w = init_weight(j);
    for (int i = 0; i <= 1; ++i) {
      float sum = 0;
      for (int k = 0; k < 3; ++k)
        for (int r = 0; r < 2; ++r) sum += push_value(k, r, i, j);
      w -= o.lr * sum;
    }
    EXPECT_EQ(w1.at(j), w) << j;
    // The async end state after 2 rounds equals the sync state after round 1.
    EXPECT_EQ(end.at(j), w) << j;
  }
  for (int m = 0; m < 4; ++m)
    for (std::int64_t n = 0; n < 11; ++n) {
      std::int64_t brute = 0;
      for (std::int64_t i = 0; i < n; ++i) brute += round_mark(m, i);
      EXPECT_EQ(mark_sum(m, n), brute) << m << " " << n;
    }
}

// With 8 workers every residue of the period-8 part is summed: that part is
// one constant, whatever the round or the element. The mark still tells a
// stale round, and elements apart (swapped keys, misplaced slices).
TEST(KvConfig, EightWorkersStillTellRoundsAndPlacesApart) {
  KvOptions o;
  o.workers = 8;
  o.replicas = 1;
  o.arrays = uniform_arrays(1, 4096);
  const auto now = expected_sync(o, 5), before = expected_sync(o, 4);
  int stale_same = 0, shifted_same = 0, base_same = 0;
  for (std::size_t j = 0; j < 1024; ++j) {
    stale_same += now.at(j) == before.at(j);
    shifted_same += now.at(j) == now.at(j + 64);   // a slice 64 elements off
    base_same += now.table[j & 15] == now.table[0];
  }
  EXPECT_EQ(base_same, 1024);  // the old data's blind spot
  EXPECT_EQ(stale_same, 0);
  EXPECT_LT(shifted_same, 1024 / 2);
}

// measure.py prints "num of arrays = N, total size = S MB" for MXNet's
// resnet symbol; these are its figures (resnet-200 as the tool's users
// quote it, 152 its default).
TEST(KvConfig, MxnetResnetArraysAreMeasurePys) {
  auto figures = [](int layers) {
    const auto a = mxnet_resnet_arrays(layers);
    std::size_t n = 0;
    for (const auto& x : a) n += x.numel;
    return report::kv_size_line(a.size(), n * 4);
  };
  EXPECT_EQ(figures(200), "num of arrays = 205, total size = 257.991328 MB");
  EXPECT_EQ(figures(152), "num of arrays = 157, total size = 240.165536 MB");
  EXPECT_EQ(figures(50), "num of arrays = 55, total size = 102.015648 MB");
  EXPECT_EQ(mxnet_resnet_arrays(18).size(), 23u);  // conv0, 8 units x 2, 4 shortcuts, fc weight and bias
  EXPECT_EQ(mxnet_resnet_arrays(200).front().name, "conv0_weight");
  EXPECT_EQ(mxnet_resnet_arrays(200).back().name, "fc1_bias");
  EXPECT_THROW(mxnet_resnet_arrays(51), UsageError);
}

TEST(KvConfig, MeasurePyBandwidthBytes) {
  KvOptions o;
  o.replicas = 8;
  EXPECT_DOUBLE_EQ(measure_py_bytes(o, 1000), 4000.0 * 2 * 7 / 8);  // size x 2(n-1)/n
  o.replicas = 1;
  EXPECT_DOUBLE_EQ(measure_py_bytes(o, 1000), 0.0);  // measure.py prints 0 for one GPU
}

TEST(KvConfig, BytesPerWorkerFollowTheDocumentedDefinition) {
  KvOptions o;
  o.workers = 4;
  o.replicas = 2;
  const std::size_t n = 1000;  // 4000 bytes
  o.mode = KvMode::kDistSync;
  EXPECT_DOUBLE_EQ(bytes_per_worker(o, n), 3 * 4000.0);
  o.mode = KvMode::kDistDeviceSync;
  EXPECT_DOUBLE_EQ(bytes_per_worker(o, n), 2 * 4000.0);
  o.mode = KvMode::kDevice;
  EXPECT_DOUBLE_EQ(bytes_per_worker(o, n), 2 * 2 * 4000.0 + 2 * 4000.0 * 3 / 4);
  o.workers = 1;  // measure.py's default: one process, its devices reduced
  EXPECT_DOUBLE_EQ(bytes_per_worker(o, n), 2 * 2 * 4000.0);
  o.mode = KvMode::kLocal;
  EXPECT_DOUBLE_EQ(bytes_per_worker(o, n), 2 * 2 * 4000.0);
}

TEST(KvConfig, RejectsInconsistentOptions) {
  KvOptions o;
  o.arrays = uniform_arrays(1, 64);
  o.mode = KvMode::kDistSync;
  o.servers = 0;
  EXPECT_THROW(validate(o), UsageError);
  o.servers = 1;
  o.mode = KvMode::kLocal;
  o.sgd = true;
  EXPECT_THROW(validate(o), UsageError);
  EXPECT_THROW(parse_mode("dist"), UsageError);
  EXPECT_EQ(parse_mode("dist_device_sync"), KvMode::kDistDeviceSync);
  // Nothing to reduce: one replica in local mode, one replica and worker in device mode.
  o.sgd = false;
  o.replicas = 1;
  EXPECT_THROW(validate(o), UsageError);
  o.replicas = 2;
  EXPECT_NO_THROW(validate(o));
  o.mode = KvMode::kDevice;
  o.replicas = 1;
  EXPECT_THROW(validate(o), UsageError);
  o.workers = 2;
  EXPECT_NO_THROW(validate(o));
}

TEST(KvReport, LinesLikeMxnetsTool) {
  EXPECT_EQ(report::kv_size_line(161, 102228128), "num of arrays = 161, total size = 102.228128 MB");
  report::KvIteration it;
  it.iter = 0;
  it.seconds = 0.5;
  it.gbps = 1.25;
  it.gbps_per_gpu = 0.875;
  it.error = 0;
  it.rel_l1_error = 0;
  // measure.py's 'iter %d, %f sec, %f GB/sec per gpu, error %f', then dtbench's.
  EXPECT_EQ(report::kv_iteration_line(it),
            "iter 1, 0.500000 sec, 0.875000 GB/sec per gpu, error 0.000000 | moved 1.250000 GB/sec per "
            "worker, max abs error 0");
  it.staleness = -2;
  EXPECT_EQ(report::kv_iteration_line(it),
            "iter 1, 0.500000 sec, 0.875000 GB/sec per gpu, staleness -2 | moved 1.250000 GB/sec per worker");
  const auto back = report::kv_iteration_from_json(nlohmann::json::parse(report::to_json(it).dump()));
  EXPECT_EQ(back.staleness, -2);
  EXPECT_EQ(back.error, 0);
  EXPECT_EQ(back.rel_l1_error, 0);
  EXPECT_EQ(back.gbps_per_gpu, 0.875);
}

TEST(KvReport, SummaryUsesMediansAndTheCeiling) {
  std::vector<std::vector<report::KvIteration>> w(2);
  auto iteration = [](double seconds, double rel_l1) {
    report::KvIteration it;
    it.seconds = seconds;
    it.error = 0;
    it.rel_l1_error = rel_l1;
    return it;
  };
  for (double s : {1.0, 2.0, 3.0}) w[0].push_back(iteration(s, 0));
  for (double s : {4.0, 5.0}) w[1].push_back(iteration(s, s == 4.0 ? 0.25 : 0));
  const auto sum = report::summarize(w, 6e9, {2.0, 1.0, 3.0}, 8e9, 3e9);
  EXPECT_DOUBLE_EQ(sum.p50_seconds, 3.0);
  EXPECT_DOUBLE_EQ(sum.p50_gbps, 2.0);
  EXPECT_DOUBLE_EQ(sum.p50_gbps_per_gpu, 1.0);
  EXPECT_DOUBLE_EQ(sum.max_rel_l1_error, 0.25);
  EXPECT_DOUBLE_EQ(sum.ceiling_gbps, 4.0);
  EXPECT_EQ(sum.max_error, 0);
  EXPECT_TRUE(std::isnan(sum.max_abs_staleness));
}

TEST(Hybrid, BatchesHaveTheOriginalsShape) {
  // benchmark_ddp_rpc.py: randint(20, 50) indices, bags advancing by
  // randint(1, 10), a target of 0..7 per bag.
  std::mt19937_64 rng(3);
  double bags = 0;
  std::int64_t shortest = 100, longest = 0;
  for (int i = 0; i < 2000; ++i) {
    const auto b = bench::hybrid::make_batch(rng, 300);
    const auto n = static_cast<std::int64_t>(b.indices.size());
    shortest = std::min(shortest, n);
    longest = std::max(longest, n);
    EXPECT_NO_THROW(bench::hybrid::validate_bags(b.indices.data(), b.indices.size(), b.offsets.data(),
                                                 b.bags(), 300));
    for (std::size_t k = 1; k < b.bags(); ++k) EXPECT_LE(b.offsets[k] - b.offsets[k - 1], 10);
    for (auto t : b.targets) EXPECT_TRUE(t >= 0 && t < 8);
    EXPECT_EQ(b.targets.size(), b.bags());
    bags += static_cast<double>(b.bags());
  }
  EXPECT_EQ(shortest, 20);
  EXPECT_EQ(longest, 50);
  EXPECT_NEAR(bags / 2000, 6.8, 0.4);  // 35 indices over steps of mean 5.5, plus the cut last bag
}

TEST(Hybrid, BadBagsAreNamed) {
  const std::int64_t idx[] = {1, 2, 3}, good[] = {0, 2}, late[] = {0, 3}, back[] = {0, 2, 1}, start[] = {1};
  EXPECT_NO_THROW(bench::hybrid::validate_bags(idx, 3, good, 2, 4));
  EXPECT_THROW(bench::hybrid::validate_bags(idx, 3, late, 2, 4), std::invalid_argument);
  EXPECT_THROW(bench::hybrid::validate_bags(idx, 3, back, 3, 4), std::invalid_argument);
  EXPECT_THROW(bench::hybrid::validate_bags(idx, 3, start, 1, 4), std::invalid_argument);
  EXPECT_THROW(bench::hybrid::validate_bags(idx, 3, good, 2, 3), std::invalid_argument);  // index 3 of 3 rows
}

TEST(Hybrid, TablePoolsBagsAndStepsEachTrainersGradient) {
  bench::hybrid::EmbeddingTable t(4, 2, 2, 0.5f, true);
  t.init(1, 0);
  const auto w0 = t.weight();
  const std::int64_t idx[] = {1, 3, 1}, off[] = {0, 2};
  float out[4];
  t.lookup(0, 0, idx, 3, off, 2, out);
  EXPECT_FLOAT_EQ(out[0], w0[2] + w0[6]);  // bag 0: rows 1 and 3
  EXPECT_FLOAT_EQ(out[3], w0[3]);          // bag 1: row 1
  const float g[] = {1, 2, 3, 4};
  t.backward(0, 0, idx, 3, off, 2, g);
  t.backward(1, 0, idx, 3, off, 2, g);  // trainer 1's gradient waits for its own step
  t.step(0, 0);
  EXPECT_FLOAT_EQ(t.weight()[2], w0[2] - 0.5f * (1 + 3));  // row 1 in both bags
  EXPECT_FLOAT_EQ(t.weight()[7], w0[7] - 0.5f * 2);
  EXPECT_FLOAT_EQ(t.weight()[0], w0[0]);  // row 0 untouched
  t.step(1, 0);
  EXPECT_FLOAT_EQ(t.weight()[2], w0[2] - 0.5f * (1 + 3) - 0.5f * (1 + 3));
  const auto log = bench::hybrid::read_table_log(t.log(), 2);
  ASSERT_EQ(log.size(), 5u);
  EXPECT_EQ(log[2].event, bench::hybrid::TableEvent::kBackward);
  EXPECT_EQ(log[2].trainer, 1);
  EXPECT_EQ(log[2].grad, std::vector<float>(g, g + 4));
  EXPECT_THROW(bench::hybrid::read_table_log(t.log().substr(0, t.log().size() - 1), 2), std::invalid_argument);
  EXPECT_THROW(t.lookup(2, 0, idx, 3, off, 2, out), std::invalid_argument);  // no trainer 2
}

TEST(Hybrid, TableRowsArePercentilesOfEpochs) {
  const auto r = report::hybrid_row("T", {4, 1, 3, 2, 5}, 60);
  EXPECT_DOUBLE_EQ(r.p50, 3);
  EXPECT_DOUBLE_EQ(r.p75, 4);
  EXPECT_DOUBLE_EQ(r.bags_per_s[0], 20);
  EXPECT_DOUBLE_EQ(r.bags_per_s[1], 15);
  // "All": epochs pooled, bags summed over trainers (the original's
  // batch_size_all_trainers).
  const auto all_row = report::hybrid_all_row({{0, {1, 2, 3}, {0.1}, 60}, {1, {3, 4, 5}, {0.2}, 40}});
  EXPECT_DOUBLE_EQ(all_row.p50, 3);
  EXPECT_DOUBLE_EQ(all_row.bags_per_s[0], 100.0 / 3);
  std::ostringstream os;
  report::print_hybrid_table(os, {{0, {1, 2, 3}, {0.1}, 60}, {1, {3, 4, 5}, {0.2}, 40}});
  EXPECT_NE(os.str().find("Trainer1"), std::string::npos);
  EXPECT_NE(os.str().find("All"), std::string::npos);
  EXPECT_NE(os.str().find("RSS peak MiB"), std::string::npos);

  // Memory: each trainer's, the largest in "All", "-" where not recorded;
  // the JSON round-trips and older reports without it still read.
  report::HybridTrainerRun a{0, {1, 2, 3}, {0.1}, 6}, b{1, {3, 4, 5}, {0.2}, 6};
  a.peak_bytes = 3 << 20;
  a.peak_rss_bytes = 100 << 20;
  a.model_state_bytes = 1 << 20;
  b.peak_bytes = 5 << 20;
  b.peak_rss_bytes = 90 << 20;
  b.model_state_bytes = 1 << 20;
  std::ostringstream mem;
  report::print_hybrid_table(mem, {a, b});
  const auto text = mem.str();
  const auto all = text.substr(text.find("All"));
  EXPECT_NE(all.find(" 5.0 "), std::string::npos) << text;
  EXPECT_NE(all.find(" 100.0"), std::string::npos) << text;
  EXPECT_EQ(os.str().find(" 5.0 "), std::string::npos);
  const auto back = report::hybrid_trainer_from_json(nlohmann::json::parse(report::to_json(b).dump()));
  EXPECT_EQ(back.peak_bytes, 5 << 20);
  EXPECT_EQ(back.peak_rss_bytes, 90 << 20);
  EXPECT_EQ(back.model_state_bytes, 1 << 20);
  EXPECT_EQ(report::hybrid_trainer_from_json(nlohmann::json::parse(report::to_json(report::HybridTrainerRun{0, {1}, {1}, 6}).dump()))
                .peak_bytes,
            -1);
}

}  // namespace
}  // namespace dtbench
