// The torch-free parts of `dtbench compare`: grid expansion, resume, the
// JSON-lines log, delta% / ±1.96σ / scaling efficiency arithmetic, the
// tables and the progress line, all on literal inputs.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "bench/compare/grid.h"
#include "core/error.h"
#include "report/compare_record.h"
#include "report/compare_reporter.h"
#include "report/progress.h"
#include "stats/stats.h"

namespace dtbench {
namespace {

using report::ComparePoint;
using report::PointKey;

TEST(Grid, ExpandsEveryCombinationInRunOrder) {
  bench::GridSpec s;
  s.models = {"mlp"};
  s.world_sizes = {1, 2};
  s.reducers = {"ddp", "overlap"};
  s.bucket_caps_mb = {1, 25};
  s.compressions = {"none", "fp16"};
  const auto g = bench::expand_grid(s);
  // ddp+fp16 is skipped: 2 buckets x (ddp, overlap, overlap+fp16) x 2 world sizes.
  ASSERT_EQ(g.points.size(), 12u);
  ASSERT_EQ(g.skipped.size(), 1u);
  EXPECT_NE(g.skipped[0].find("ddp+fp16"), std::string::npos);
  EXPECT_EQ(g.points[0].id(), "mlp/1R/ddp/1MB");
  EXPECT_EQ(g.points[1].id(), "mlp/2R/ddp/1MB");
  EXPECT_EQ(g.points[2].id(), "mlp/1R/overlap/1MB");
  EXPECT_EQ(g.points[5].id(), "mlp/2R/overlap+fp16/1MB");
  EXPECT_EQ(g.points[6].id(), "mlp/1R/ddp/25MB");
}

TEST(Grid, AmpIsAnAxisWithFp16SkippedForShardedStrategies) {
  bench::GridSpec s;
  s.models = {"mlp"};
  s.world_sizes = {1, 2};
  s.reducers = {"horovod", "ddp", "fsdp"};
  s.bucket_caps_mb = {25};
  s.compressions = {"none", "fp16"};
  s.amps = {"none", "fp16"};
  const auto g = bench::expand_grid(s);
  // none: horovod, ddp, fsdp; fp16 compression: horovod only; amp fp16:
  // not fsdp. (3 + 1) + (2 + 1) configurations x 2 world sizes.
  ASSERT_EQ(g.points.size(), 14u);
  EXPECT_EQ(g.points[0].id(), "mlp/1R/horovod/25MB");
  EXPECT_EQ(g.points[6].id(), "mlp/1R/horovod+amp-fp16/25MB");
  EXPECT_EQ(g.points[8].id(), "mlp/1R/ddp+amp-fp16/25MB");
  EXPECT_EQ(g.points[10].id(), "mlp/1R/horovod+fp16/25MB");
  EXPECT_EQ(g.points[13].id(), "mlp/2R/horovod+fp16+amp-fp16/25MB");
  bool fsdp_named = false;
  for (const auto& line : g.skipped) fsdp_named = fsdp_named || line.rfind("fsdp+amp-fp16: skipped", 0) == 0;
  EXPECT_TRUE(fsdp_named);
  s.amps = {"none", "none"};
  EXPECT_THROW(bench::expand_grid(s), UsageError);
  s.amps = {"fp32"};
  EXPECT_THROW(bench::expand_grid(s), UsageError);
  s.amps = {};
  EXPECT_THROW(bench::expand_grid(s), UsageError);
}

TEST(Grid, ActivationCheckpointingIsAnAxis) {
  bench::GridSpec s;
  s.models = {"gpt2"};
  s.world_sizes = {1, 2};
  s.reducers = {"ddp", "fsdp"};
  s.bucket_caps_mb = {25};
  s.amps = {"bf16"};
  s.acs = {"none", "full"};
  const auto g = bench::expand_grid(s);
  // Run order: ... amp, activation checkpointing, reducer, world size.
  ASSERT_EQ(g.points.size(), 8u);
  EXPECT_EQ(g.points[0].id(), "gpt2/1R/ddp+amp-bf16/25MB");
  EXPECT_EQ(g.points[3].id(), "gpt2/2R/fsdp+amp-bf16/25MB");
  EXPECT_EQ(g.points[4].id(), "gpt2/1R/ddp+amp-bf16+ac-full/25MB");
  EXPECT_EQ(g.points[7].ac, "full");
  s.acs = {"full", "full"};
  EXPECT_THROW(bench::expand_grid(s), UsageError);
  s.acs = {"op"};
  EXPECT_THROW(bench::expand_grid(s), UsageError);
}

TEST(Records, ActivationCheckpointingKeyRoundTripsAndOldPointsReadAsNone) {
  PointKey k;
  k.model = "gpt2";
  k.world_size = 2;
  k.reducer = "fsdp";
  k.ac = "selective";
  EXPECT_EQ(k.strategy(), "fsdp+ac-selective");
  EXPECT_EQ(report::point_key_from_json(report::to_json(k), "k").id(), "gpt2/2R/fsdp+ac-selective/25MB");
  auto old = report::to_json(k);
  old.erase("activation_checkpointing");  // a log written before it was an axis
  EXPECT_EQ(report::point_key_from_json(old, "k").ac, "none");
  old["activation_checkpointing"] = "op";
  EXPECT_THROW(report::point_key_from_json(old, "k"), UsageError);
}

TEST(Records, AmpKeyRoundTripsAndOldPointsReadAsNone) {
  PointKey k;
  k.model = "mlp";
  k.world_size = 2;
  k.reducer = "ddp";
  k.amp = "bf16";
  EXPECT_EQ(k.strategy(), "ddp+amp-bf16");
  EXPECT_EQ(report::point_key_from_json(report::to_json(k), "k").id(), "mlp/2R/ddp+amp-bf16/25MB");
  auto old = report::to_json(k);
  old.erase("amp");  // a log written before amp was an axis
  EXPECT_EQ(report::point_key_from_json(old, "k").amp, "none");
  old["amp"] = "fp8";
  EXPECT_THROW(report::point_key_from_json(old, "k"), UsageError);
}

TEST(Grid, RejectsBadLists) {
  bench::GridSpec s;
  s.reducers = {"ddp", "ddp"};
  EXPECT_THROW(bench::expand_grid(s), UsageError);
  s.reducers = {"none"};
  EXPECT_THROW(bench::expand_grid(s), UsageError);
  s.reducers = {"ddp"};
  s.compressions = {"zip"};
  EXPECT_THROW(bench::expand_grid(s), UsageError);
  s.compressions = {"fp16"};  // only ddp+fp16: nothing can run
  EXPECT_THROW(bench::expand_grid(s), UsageError);
  s.compressions = {"none"};
  s.bucket_caps_mb = {0};
  EXPECT_THROW(bench::expand_grid(s), UsageError);
  s.bucket_caps_mb = {25};
  s.world_sizes = {};
  EXPECT_THROW(bench::expand_grid(s), UsageError);
}

report::DdpRun run_with(int world, int64_t batch, std::vector<std::vector<double>> totals) {
  report::DdpRun r;
  r.world_size = world;
  r.batch_per_rank = batch;
  for (int k = 0; k < world; ++k) {
    report::RankSamples s;
    s.rank = k;
    s.total = totals[k];
    s.forward.assign(s.total.size(), 0.01);
    s.backward.assign(s.total.size(), 0.02);
    s.comm_wait.assign(s.total.size(), 0.005 * (k + 1));
    s.optimizer.assign(s.total.size(), 0.001);
    r.ranks.push_back(s);
  }
  return r;
}

ComparePoint point(const std::string& reducer, int world, double bucket, report::DdpRun run,
                   const std::string& compression = "none") {
  ComparePoint p;
  p.key.model = "mlp";
  p.key.reducer = reducer;
  p.key.world_size = world;
  p.key.bucket_cap_mb = bucket;
  p.key.compression = compression;
  p.run = std::move(run);
  p.run.reducer = reducer;
  p.extras = report::Json::object();
  return p;
}

TEST(Grid, RemainingPointsSkipsThoseDone) {
  bench::GridSpec s;
  s.models = {"mlp"};
  s.world_sizes = {1, 2};
  s.reducers = {"ddp"};
  s.bucket_caps_mb = {25};
  const auto g = bench::expand_grid(s);
  const std::vector<ComparePoint> done{point("ddp", 2, 25, run_with(2, 1, {{1}, {1}}))};
  const auto left = bench::remaining_points(g, done);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].id(), "mlp/1R/ddp/25MB");
}

TEST(Stats, MeanBandAndScalingEfficiency) {
  const auto b = stats::mean_band_196({1, 2, 3});  // mean 2, sample sd 1
  EXPECT_DOUBLE_EQ(b.mean, 2);
  EXPECT_DOUBLE_EQ(b.half_width, 1.96);
  EXPECT_DOUBLE_EQ(stats::mean_band_196({5}).half_width, 0);
  EXPECT_DOUBLE_EQ(stats::scaling_efficiency(160, 2, 100), 0.8);
  EXPECT_THROW(stats::scaling_efficiency(1, 0, 1), std::invalid_argument);
  EXPECT_THROW(stats::scaling_efficiency(1, 2, 0), std::invalid_argument);
  EXPECT_THROW(stats::mean_band_196({}), std::invalid_argument);
}

TEST(Records, PhaseTimesAddExposedCommunicationPerRank) {
  auto r = run_with(2, 10, {{0.1, 0.1}, {0.1, 0.1}});
  const auto t = report::phase_times(r, "backward+comm_wait");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t[0], 0.02 + 0.01);  // rank 1 has the larger comm_wait
}

// On a GPU the phase tables take the CUDA-event phases (compare_ddp.py's
// timing), not the host clock's launch times; and JSON keeps them.
TEST(Records, PhaseTablesUseTheGpusOwnPhasesWhereRecorded) {
  auto gpu = [](report::DdpRun r) {
    for (auto& k : r.ranks) {
      const auto n = k.total.size();
      k.device.forward.assign(n, 0.040);  // the host saw 0.01: a launch
      k.device.backward.assign(n, 0.050);
      k.device.comm_wait.assign(n, 0.0);
      k.device.optimizer.assign(n, 0.002);
      k.device.total.assign(n, 0.092);
    }
    return r;
  };
  std::vector<ComparePoint> pts{point("ddp", 2, 25, gpu(run_with(2, 10, {{0.1}, {0.1}}))),
                                point("overlap", 2, 25, gpu(run_with(2, 10, {{0.1}, {0.1}})))};
  EXPECT_TRUE(report::has_device_phases(pts[0].run));
  EXPECT_EQ(report::device_phase_times(pts[0].run, "forward"), (std::vector<double>{0.040}));
  std::ostringstream out;
  report::CompareConsoleReporter(out, "ddp").phase_tables(pts);
  const auto text = out.str();
  EXPECT_NE(text.find("forward (ms per iteration, slowest rank, GPU time by CUDA events;"), std::string::npos) << text;
  EXPECT_NE(text.find("40.00 (base)"), std::string::npos) << text;
  EXPECT_EQ(text.find("10.00"), std::string::npos) << "host-clock forward in a GPU table: " << text;
  const auto back = report::ddp_run_from_json(report::to_json(pts[0].run), "test");
  EXPECT_EQ(back.ranks[1].device.total, (std::vector<double>{0.092}));
  // One point without them (a CPU run): the host clock for the whole table.
  pts[1].run.ranks[0].device = {};
  std::ostringstream mixed;
  report::CompareConsoleReporter(mixed, "ddp").phase_tables(pts);
  EXPECT_EQ(mixed.str().find("CUDA events"), std::string::npos) << mixed.str();
}

TEST(Records, ThroughputRowsAndEfficiency) {
  // 1 rank: 10 examples in 0.1 s = 100/s. 2 ranks: 10 per rank in 0.125 s
  // (slowest rank) = 80/s per rank, 160 total, efficiency 0.8.
  std::vector<ComparePoint> pts{point("ddp", 1, 25, run_with(1, 10, {{0.1, 0.1}})),
                                point("ddp", 2, 25, run_with(2, 10, {{0.1, 0.125}, {0.125, 0.1}})),
                                point("sync", 2, 25, run_with(2, 10, {{0.2, 0.2}, {0.2, 0.2}}))};
  const auto rows = report::throughput_rows(pts);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(rows[0].per_rank.mean, 100);
  EXPECT_DOUBLE_EQ(*rows[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(rows[1].per_rank.mean, 80);
  EXPECT_DOUBLE_EQ(rows[1].per_rank.half_width, 0);
  EXPECT_DOUBLE_EQ(rows[1].total, 160);
  EXPECT_DOUBLE_EQ(*rows[1].efficiency, 0.8);
  EXPECT_FALSE(rows[2].efficiency.has_value()) << "no 1-rank sync point to compare with";
}

TEST(Records, ConfigurationTableHasOneColumnPerStrategyAndARowPerWorldSize) {
  auto fp16 = point("horovod", 2, 25, run_with(2, 10, {{0.05, 0.05}, {0.05, 0.05}}));
  fp16.key.compression = "fp16";
  std::vector<ComparePoint> pts{point("horovod", 1, 25, run_with(1, 10, {{0.1, 0.1}})),
                                point("horovod", 2, 25, run_with(2, 10, {{0.1, 0.125}, {0.125, 0.1}})),
                                fp16, point("ddp", 2, 25, run_with(2, 10, {{0.2, 0.2}, {0.2, 0.2}}))};
  std::ostringstream out;
  report::CompareConsoleReporter(out, "ddp").configuration_table(pts);
  const auto s = out.str();
  EXPECT_NE(s.find("ranks          horovod     horovod+fp16              ddp"), std::string::npos) << s;
  EXPECT_NE(s.find("    1            100.0                -                -"), std::string::npos) << s;
  EXPECT_NE(s.find("    2            160.0            400.0            100.0"), std::string::npos) << s;
  std::ostringstream one;
  report::CompareConsoleReporter(one, "ddp").configuration_table({pts[0], pts[1]});
  EXPECT_TRUE(one.str().empty()) << "a single configuration has no table";
}

TEST(Records, BaselineAndDelta) {
  std::vector<ComparePoint> pts{point("ddp", 2, 25, run_with(2, 10, {{0.1}, {0.1}})),
                                point("overlap", 2, 25, run_with(2, 10, {{0.08}, {0.08}})),
                                point("overlap", 2, 25, run_with(2, 10, {{0.2}, {0.2}}), "fp16"),
                                point("overlap", 2, 5, run_with(2, 10, {{0.2}, {0.2}}))};
  EXPECT_EQ(report::find_baseline(pts, pts[1].key, "ddp"), &pts[0]);
  EXPECT_EQ(report::find_baseline(pts, pts[2].key, "ddp"), &pts[0]);
  EXPECT_EQ(report::find_baseline(pts, pts[3].key, "ddp"), nullptr) << "other bucket size";
  const double base = 0.1;
  EXPECT_EQ(report::time_with_delta(0.08, &base, false), "80.00 (-20.0%)");
  EXPECT_EQ(report::time_with_delta(0.1, &base, true), "100.00 (base)");
  EXPECT_EQ(report::time_with_delta(0.1, nullptr, false), "100.00");

  std::ostringstream out;
  report::CompareConsoleReporter(out, "ddp").all(pts);
  const auto text = out.str();
  EXPECT_NE(text.find("mlp, bucket 25 MB: forward"), std::string::npos);
  EXPECT_NE(text.find("backward incl. exposed communication"), std::string::npos);
  EXPECT_NE(text.find("80.00 (-20.0%)"), std::string::npos) << text;
  EXPECT_NE(text.find("overlap+fp16"), std::string::npos);
  EXPECT_NE(text.find("gradient compression"), std::string::npos);
  EXPECT_NE(text.find("125.0 ± 0.0"), std::string::npos) << "per-rank throughput of overlap";
}

TEST(Records, AmpPointsHaveTheirOwnBaselineEfficiencyAndColumn) {
  auto amp = [](ComparePoint p) {
    p.key.amp = "bf16";
    return p;
  };
  std::vector<ComparePoint> pts{point("ddp", 1, 25, run_with(1, 10, {{0.1}})),
                                point("ddp", 2, 25, run_with(2, 10, {{0.1}, {0.1}})),
                                amp(point("ddp", 1, 25, run_with(1, 10, {{0.05}}))),
                                amp(point("ddp", 2, 25, run_with(2, 10, {{0.1}, {0.1}})))};
  EXPECT_EQ(report::find_baseline(pts, pts[3].key, "ddp"), &pts[3]) << "same amp";
  const auto rows = report::throughput_rows(pts);
  EXPECT_DOUBLE_EQ(*rows[1].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(*rows[3].efficiency, 0.5) << "vs the 1-rank point with amp";
  std::ostringstream out;
  report::CompareConsoleReporter(out, "ddp").configuration_table(pts);
  EXPECT_NE(out.str().find("ranks              ddp     ddp+amp-bf16"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("    2            200.0            200.0"), std::string::npos) << out.str();
}

std::string temp_path(const char* name) {
  return ::testing::TempDir() + "/dtbench_" + name + std::to_string(::getpid());
}

TEST(CompareLog, WritesReadsAndToleratesACutShortLastLine) {
  const auto path = temp_path("log.jsonl");
  std::remove(path.c_str());
  report::Json config{{"iters", 3}, {"backend", "gloo"}};
  const auto header = report::compare_log_header({{"host", "x"}}, config, {"dtbench", "compare"});
  std::vector<ComparePoint> pts{point("ddp", 1, 25, run_with(1, 4, {{0.1, 0.2}})),
                                point("sync", 2, 25, run_with(2, 4, {{0.1}, {0.3}}))};
  {
    std::ofstream f(path);
    f << header.dump() << "\n" << report::to_json(pts[0]).dump() << "\n";
    const auto second = report::to_json(pts[1]).dump();
    f << second.substr(0, second.size() / 2);  // killed mid-append
  }
  auto log = report::read_compare_log(path);
  EXPECT_TRUE(log.truncated_tail);
  ASSERT_EQ(log.points.size(), 1u);
  EXPECT_EQ(log.points[0].key.id(), "mlp/1R/ddp/25MB");
  EXPECT_EQ(log.points[0].run.ranks[0].total, (std::vector<double>{0.1, 0.2}));
  EXPECT_EQ(report::config_mismatch(log.header.at("config"), config), "");

  report::rewrite_compare_log(path, log);
  log = report::read_compare_log(path);
  EXPECT_FALSE(log.truncated_tail);
  EXPECT_EQ(log.points.size(), 1u);
  std::remove(path.c_str());
}

TEST(CompareLog, RejectsForeignOrBrokenFiles) {
  const auto path = temp_path("bad.jsonl");
  const auto write = [&](const std::string& text) {
    std::ofstream f(path);
    f << text;
  };
  write("");
  EXPECT_THROW(report::read_compare_log(path), UsageError);
  write("{\"schema\":\"dtbench.ddp\"}\n");
  EXPECT_THROW(report::read_compare_log(path), UsageError);
  const auto header = report::compare_log_header({}, {}, {}).dump();
  write(header + "\n{broken\n" + report::to_json(point("ddp", 1, 1, run_with(1, 1, {{1}}))).dump() + "\n");
  EXPECT_THROW(report::read_compare_log(path), UsageError) << "a broken line in the middle";
  write(header + "\n{\"kind\":\"point\",\"key\":{\"model\":\"m\"}}\n");
  EXPECT_THROW(report::read_compare_log(path), UsageError) << "a point without its fields";
  std::remove(path.c_str());
  EXPECT_THROW(report::read_compare_log(path), UsageError) << "missing file";
}

TEST(CompareLog, ConfigMismatchNamesTheKey) {
  const report::Json a{{"iters", 3}, {"backend", "gloo"}};
  EXPECT_EQ(report::config_mismatch(a, {{"iters", 4}, {"backend", "gloo"}}), "iters: 3 vs 4");
  EXPECT_EQ(report::config_mismatch(a, {{"iters", 3}}), "backend: \"gloo\" vs absent");
  EXPECT_EQ(report::config_mismatch(a, {{"iters", 3}, {"backend", "gloo"}, {"amp", "bf16"}}),
            "amp: absent vs \"bf16\"");
  // A log from before --tp ran without tensor parallelism: it resumes at tp 1, not at tp 2.
  EXPECT_EQ(report::config_mismatch(a, {{"iters", 3}, {"backend", "gloo"}, {"tp", 1}}), "");
  EXPECT_EQ(report::config_mismatch(a, {{"iters", 3}, {"backend", "gloo"}, {"tp", 2}}), "tp: absent vs 2");
}

TEST(Progress, LineAndEta) {
  EXPECT_EQ(report::format_eta(5), "5s");
  EXPECT_EQ(report::format_eta(62), "1m02s");
  EXPECT_EQ(report::format_eta(7380), "2h03m");
  EXPECT_EQ(report::format_eta(-1), "?");
  EXPECT_EQ(report::progress_line(3, 12, 62, 190, "x", 12), "[###.........] 3/12 points  elapsed 1m02s  eta 3m10s  x");
  std::ostringstream out;
  report::ProgressBar bar(out, /*terminal=*/false, 4, 1);
  bar.start("a");
  bar.step_done();
  EXPECT_NE(out.str().find("1/4 points"), std::string::npos);
  EXPECT_NE(out.str().find("2/4 points"), std::string::npos);
  EXPECT_EQ(out.str().find('\r'), std::string::npos) << "no carriage returns when not a terminal";
}

}  // namespace
}  // namespace dtbench
