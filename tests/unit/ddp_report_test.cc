// The ddp records, table and diff with literal inputs.
#include <sstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "report/ddp_diff.h"
#include "report/ddp_record.h"
#include "report/ddp_reporter.h"
#include "train/train_options.h"

namespace dtbench::report {
namespace {

RankSamples samples(int rank, std::vector<double> total) {
  RankSamples r;
  r.rank = rank;
  r.total = total;
  for (double t : total) {
    r.forward.push_back(t * 0.25);
    r.backward.push_back(t * 0.5);
    r.comm_wait.push_back(t * 0.1);
    r.optimizer.push_back(t * 0.15);
  }
  return r;
}

DdpRun two_ranks() {
  DdpRun run;
  run.label = "1N/2R";
  run.reducer = "ddp";
  run.world_size = 2;
  run.batch_per_rank = 16;
  run.param_hash = "00000000deadbeef";
  run.ranks = {samples(0, {1.0, 2.0, 3.0, 4.0}), samples(1, {2.0, 1.0, 5.0, 4.0})};
  return run;
}

TEST(DdpRecord, SlowestRankTimeIsTheSlowestRankPerIteration) {
  EXPECT_EQ(slowest_rank_times(two_ranks()), (std::vector<double>{2.0, 2.0, 5.0, 4.0}));
  EXPECT_EQ(phase_times(two_ranks(), "backward"), (std::vector<double>{1.0, 1.0, 2.5, 2.0}));
}

// benchmark.py's sec/iter: every rank's samples in one pool.
TEST(DdpRecord, PooledTimesChainEveryRanksSamples) {
  EXPECT_EQ(pooled_times(two_ranks()), (std::vector<double>{1.0, 2.0, 3.0, 4.0, 2.0, 1.0, 5.0, 4.0}));
  // The job's throughput: all ranks' examples over the slowest-rank p50 (3 s).
  EXPECT_DOUBLE_EQ(job_examples_per_sec(two_ranks(), 50), 32 / 3.0);
}

TEST(DdpRecord, RankSpread) {
  // p50 of rank 0 = 2.5, rank 1 = 3.0 -> (3.0 - 2.5) / 2.5 = 20 %.
  EXPECT_NEAR(rank_p50_spread_percent(two_ranks()), 20.0, 1e-9);
  DdpRun one = two_ranks();
  one.ranks.resize(1);
  EXPECT_EQ(rank_p50_spread_percent(one), 0.0);
}

TEST(DdpRecord, JsonRoundTripAndSummary) {
  const auto j = to_json(two_ranks());
  EXPECT_EQ(j["global_batch"], 32);
  // Pooled {1,1,2,2,3,4,4,5}: median 2.5, per rank 16 / 2.5 examples/s.
  EXPECT_DOUBLE_EQ(j["summary"]["p50"].get<double>(), 2.5);
  EXPECT_EQ(j["summary"]["samples"], 8);
  EXPECT_DOUBLE_EQ(j["summary"]["examples_per_sec_per_rank_p50"].get<double>(), 16 / 2.5);
  // Slowest rank {2,2,5,4}: median 3, the job's 32 / 3.
  EXPECT_DOUBLE_EQ(j["slowest_rank_summary"]["p50"].get<double>(), 3.0);
  EXPECT_EQ(j["slowest_rank_summary"]["iterations"], 4);
  EXPECT_DOUBLE_EQ(j["slowest_rank_summary"]["job_examples_per_sec_p50"].get<double>(), 32 / 3.0);
  const auto back = ddp_run_from_json(j, "test");
  EXPECT_EQ(back.label, "1N/2R");
  EXPECT_EQ(back.ranks.size(), 2u);
  EXPECT_EQ(back.ranks[1].total, (std::vector<double>{2.0, 1.0, 5.0, 4.0}));
}

TEST(DdpRecord, TokensPerSecondPerRank) {
  auto run = two_ranks();
  EXPECT_EQ(tokens_per_sec_per_rank(run), 0.0);  // not a token model
  run.tokens_per_example = 64;
  EXPECT_DOUBLE_EQ(tokens_per_sec_per_rank(run), 16 * 64 / 3.0);  // p50 iteration 3 s
  const auto j = to_json(run);
  EXPECT_DOUBLE_EQ(j["tokens_per_sec_per_rank"].get<double>(), 16 * 64 / 3.0);
  EXPECT_EQ(ddp_run_from_json(j, "test").tokens_per_example, 64);
}

// A tensor-parallel row: tp ranks train one replica's batch, so the job
// trains world/tp batches and each rank a 1/tp share of the examples and
// FLOPs (torchtitan divides by its non-data-parallel degree).
TEST(DdpRecord, TensorParallelRanksShareTheirReplicasBatch) {
  auto run = two_ranks();
  run.tp = 2;
  run.tokens_per_example = 64;
  run.train_flops_per_example = 1e12;
  EXPECT_EQ(run.dp(), 1);
  EXPECT_EQ(run.global_batch(), 16);
  EXPECT_DOUBLE_EQ(job_examples_per_sec(run, 50), 16 / 3.0);  // the slowest-rank p50 is 3 s
  EXPECT_DOUBLE_EQ(per_rank_throughput(run)[0], 8 / 2.0);     // iteration 0: 2 s
  EXPECT_DOUBLE_EQ(tokens_per_sec_per_rank(run), 8 * 64 / 3.0);
  EXPECT_DOUBLE_EQ(achieved_tflops_per_rank(run), 8 / 3.0);
  const auto j = to_json(run);
  EXPECT_EQ(j["tp"], 2);
  EXPECT_EQ(j["dp"], 1);
  EXPECT_DOUBLE_EQ(j["summary"]["examples_per_sec_per_rank_p50"].get<double>(), 8 / 2.5);
  EXPECT_EQ(ddp_run_from_json(j, "test").tp, 2);
  auto old = j;
  old.erase("tp");  // a report from before layouts
  EXPECT_EQ(ddp_run_from_json(old, "test").tp, 1);
  auto bad = j;
  bad["tp"] = 3;  // does not divide the world
  EXPECT_THROW(ddp_run_from_json(bad, "x"), UsageError);
}

TEST(DdpRecord, MalformedRunsAreRefused) {
  auto j = to_json(two_ranks());
  auto bad = j;
  bad.erase("ranks");
  EXPECT_THROW(ddp_run_from_json(bad, "x"), UsageError);
  bad = j;
  bad["world_size"] = "two";
  EXPECT_THROW(ddp_run_from_json(bad, "x"), UsageError);
  bad = j;
  bad["ranks"][0]["total"][1] = -1.0;
  EXPECT_THROW(ddp_run_from_json(bad, "x"), UsageError);
  bad = j;
  bad["ranks"][0]["total"] = nlohmann::ordered_json::array();
  EXPECT_THROW(ddp_run_from_json(bad, "x"), UsageError);
}

TEST(DdpRecord, Percentiles) {
  EXPECT_EQ(parse_percentiles("50,90,99.9", "--p"), (std::vector<double>{50, 90, 99.9}));
  EXPECT_THROW(parse_percentiles("50,,90", "--p"), UsageError);
  EXPECT_THROW(parse_percentiles("101", "--p"), UsageError);
  EXPECT_THROW(parse_percentiles("5x", "--p"), UsageError);
  EXPECT_EQ(percentile_name(99.9), "p99.9");
}

TEST(DdpReporter, RowShowsSecPerIterAndExamplesPerSec) {
  std::ostringstream out;
  DdpConsoleReporter rep(out, {50, 90});
  rep.header("resnet50", 16, "");
  rep.row(two_ranks());
  const auto s = out.str();
  EXPECT_NE(s.find("Benchmark: resnet50 with batch size 16"), std::string::npos) << s;
  // benchmark.py's: pooled p50 2.5 s, 16 / 2.5 = 6 examples/s per rank;
  // then the slowest rank's p50 (3 s) and the job's 32 / 3 = 11 examples/s.
  EXPECT_NE(s.find("2 ranks --    1N/2R:  p50: 2.500s      6/s"), std::string::npos) << s;
  EXPECT_NE(s.find("3.000s         11"), std::string::npos) << s;
  EXPECT_NE(s.find("20.0%"), std::string::npos) << s;
}

nlohmann::ordered_json report_of(const std::string& model, double scale, double bucket) {
  auto run = two_ranks();
  for (auto& r : run.ranks)
    for (auto& t : r.total) t *= scale;
  nlohmann::ordered_json doc{{"schema", "dtbench.ddp"},
                             {"schema_version", 1},
                             {"env", {{"host", {{"cpu", "x"}}}}},
                             {"config", {{"model", model}, {"bucket_cap_mb", bucket}}}};
  doc["runs"] = nlohmann::ordered_json::array({to_json(run)});
  return doc;
}

TEST(DdpDiff, TimeDiffIsDiffPys) {
  // diff.py: -100 * (vb - va) / va.
  EXPECT_DOUBLE_EQ(time_diff_percent(2.0, 1.0), 50.0);  // test twice as fast
  EXPECT_DOUBLE_EQ(time_diff_percent(1.0, 2.0), -100.0);
  EXPECT_THROW(time_diff_percent(0.0, 1.0), std::invalid_argument);
}

TEST(DdpDiff, SkipsRowsWhoseBatchSizesDiffer) {
  auto test = report_of("resnet50", 0.5, 25);
  test["runs"][0]["batch_per_rank"] = 32;
  test["runs"][0]["global_batch"] = 64;
  std::ostringstream out;
  write_ddp_diff(out, report_of("resnet50", 1.0, 25), test, {50});
  const auto s = out.str();
  EXPECT_NE(s.find("1N/2R  skipped: batch size per rank differs (base 16, test 32)"), std::string::npos) << s;
  EXPECT_EQ(s.find("+100.0%"), std::string::npos) << s;
  EXPECT_NE(s.find("(no row appears in both reports with the same batch size)"), std::string::npos) << s;
}

TEST(DdpDiff, SkipsRowsOfAnotherTensorParallelDegree) {
  auto test = report_of("resnet50", 0.5, 25);
  test["runs"][0]["tp"] = 2;
  std::ostringstream out;
  write_ddp_diff(out, report_of("resnet50", 1.0, 25), test, {50});
  const auto s = out.str();
  EXPECT_NE(s.find("1N/2R  skipped: the layout differs (base tp 1 pp 1, test tp 2 pp 1)"), std::string::npos) << s;
  EXPECT_EQ(s.find("+100.0%"), std::string::npos) << s;
}

TEST(DdpDiff, SpeedupSign) {
  EXPECT_DOUBLE_EQ(speedup_percent(2.0, 1.0), 100.0);  // test twice as fast
  EXPECT_DOUBLE_EQ(speedup_percent(1.0, 2.0), -50.0);
  EXPECT_THROW(speedup_percent(0.0, 1.0), std::invalid_argument);
}

TEST(DdpDiff, ConfigSideBySideAndDelta) {
  std::ostringstream out;
  write_ddp_diff(out, report_of("resnet50", 1.0, 25), report_of("resnet50", 0.5, 1), {50});
  const auto s = out.str();
  EXPECT_NE(s.find("* config.bucket_cap_mb: 25.0 vs 1.0"), std::string::npos) << s;
  EXPECT_NE(s.find("  config.model: resnet50 vs resnet50"), std::string::npos) << s;
  // Pooled p50 2.5 s against 1.25 s: diff.py's +50.0 %, throughput +100.0 %;
  // the slowest rank's p50 3 s against 1.5 s; ex/s per rank 16 / 2.5, 16 / 1.25.
  EXPECT_NE(s.find("1N/2R   p50      2.5000         6      1.2500        12    +50.0%  +100.0%        3.0000       1.5000"),
            std::string::npos) << s;
}

TEST(DdpDiff, RefusesDifferentModelsAndSchemas) {
  std::ostringstream out;
  EXPECT_THROW(write_ddp_diff(out, report_of("resnet50", 1, 25), report_of("resnet18", 1, 25), {50}),
               UsageError);
  auto comm = report_of("resnet50", 1, 25);
  comm["schema"] = "dtbench.comm";
  EXPECT_THROW(check_ddp_report(comm, "f"), UsageError);
  auto v2 = report_of("resnet50", 1, 25);
  v2["schema_version"] = 3;
  EXPECT_THROW(check_ddp_report(v2, "f"), UsageError);
  EXPECT_THROW(check_ddp_report(nlohmann::ordered_json::array(), "f"), UsageError);
}

}  // namespace
}  // namespace dtbench::report

namespace dtbench::train {

TEST(TrainOptions, Validation) {
  TrainOptions o;
  EXPECT_NO_THROW(validate(o));
  auto bad = o;
  bad.reducer = "zero4";  // no such strategy
  EXPECT_THROW(validate(bad), UsageError);
  bad = o;
  bad.batch_size = 0;
  EXPECT_THROW(validate(bad), UsageError);
  bad = o;
  bad.bucket_cap_mb = 0;
  EXPECT_THROW(validate(bad), UsageError);
  bad = o;
  bad.momentum = 1.0;
  EXPECT_THROW(validate(bad), UsageError);
  bad = o;
  bad.optimizer = "adam";
  EXPECT_THROW(validate(bad), UsageError);
  bad = o;
  bad.optimizer = "adamw";
  bad.momentum = 0.5;  // SGD's, refused with AdamW
  EXPECT_THROW(validate(bad), UsageError);
  bad = o;
  bad.weight_decay = 0.1;  // SGD's coupled, AdamW's decoupled: both take it
  EXPECT_NO_THROW(validate(bad));
  bad.optimizer = "adamw";
  EXPECT_NO_THROW(validate(bad));
  bad.weight_decay = 1.5;
  EXPECT_THROW(validate(bad), UsageError);
  bad = o;
  bad.tp = 0;
  EXPECT_THROW(validate(bad), UsageError);
  bad.tp = 2;
  EXPECT_NO_THROW(validate(bad));
  bad.amp = "fp16";  // the scaler's skip would need agreeing across the parts
  EXPECT_THROW(validate(bad), UsageError);
}

// The ZeRO paper's model-state formulas (Rajbhandari et al. 2020, section
// 5), in float32: parameters and gradients 4 bytes each, K states of 4 bytes.
TEST(TrainOptions, ModelStateFormulas) {
  const int64_t psi = 1000;
  EXPECT_EQ(expected_model_state_bytes("ddp", psi, 2, 4), 16 * psi);
  EXPECT_EQ(expected_model_state_bytes("overlap", psi, 1, 4), 12 * psi);
  EXPECT_EQ(expected_model_state_bytes("zero1", psi, 2, 4), 8 * psi + 8 * psi / 4);
  EXPECT_EQ(expected_model_state_bytes("zero2", psi, 2, 4), 4 * psi + 12 * psi / 4);
  EXPECT_EQ(expected_model_state_bytes("fsdp", psi, 2, 4), 16 * psi / 4);
  EXPECT_EQ(sharded_padding_bound("ddp", 3, 2, 4), 0);
  EXPECT_EQ(sharded_padding_bound("fsdp", 3, 2, 4), 3 * 3 * 4 * 4);
  TrainOptions o;
  o.reshard_after_forward = 0;
  EXPECT_THROW(validate(o), UsageError);  // ddp has nothing to reshard
  o.reducer = "fsdp";
  EXPECT_NO_THROW(validate(o));
  o.amp = "fp16";
  EXPECT_THROW(validate(o), UsageError);  // the loss scaler over shards
  o.amp = "bf16";
  EXPECT_NO_THROW(validate(o));
  o.compression = "fp16";
  EXPECT_THROW(validate(o), UsageError);
}

// SGD: PyTorch's DDP benchmark's optim.SGD(lr 0.001, momentum 0.9,
// weight_decay 1e-4); AdamW: torch.optim.AdamW's defaults.
TEST(TrainOptions, OptimizerDefaultsAreTorchOptims) {
  TrainOptions o;
  EXPECT_EQ(o.optimizer, "sgd");
  EXPECT_DOUBLE_EQ(effective_lr(o), 1e-3);
  EXPECT_DOUBLE_EQ(effective_momentum(o), 0.9);
  EXPECT_DOUBLE_EQ(effective_weight_decay(o), 1e-4);
  EXPECT_EQ(optimizer_states(o), 1);
  o.momentum = 0;
  EXPECT_EQ(optimizer_states(o), 0);
  o = TrainOptions{};
  o.optimizer = "adamw";
  EXPECT_DOUBLE_EQ(effective_lr(o), 1e-3);  // torch.optim.AdamW's defaults
  EXPECT_DOUBLE_EQ(effective_weight_decay(o), 0.01);
  EXPECT_DOUBLE_EQ(effective_momentum(o), 0);
  EXPECT_EQ(optimizer_states(o), 2);
  o.lr = 3e-4;
  o.weight_decay = 0;
  EXPECT_DOUBLE_EQ(effective_lr(o), 3e-4);
  EXPECT_DOUBLE_EQ(effective_weight_decay(o), 0);
}

}  // namespace dtbench::train

namespace dtbench::train {
TEST(TrainOptions, WithoutStrategyLeavesNoneOfItsSettings) {
  TrainOptions o;
  o.reducer = "fsdp";
  o.reshard_after_forward = 0;
  o.param_dtype = "bf16";
  o.amp = "bf16";
  const auto n = without_strategy(o);
  EXPECT_EQ(n.reducer, "none");
  EXPECT_EQ(n.reshard_after_forward, -1);
  EXPECT_EQ(n.param_dtype, "");
  EXPECT_EQ(n.amp, "bf16");  // not the strategy's
  EXPECT_NO_THROW(validate(n));
  o.reducer = "horovod";
  o.compression = "fp16";
  o.fusion_threshold_mb = 64;
  EXPECT_NO_THROW(validate(without_strategy(o)));
  EXPECT_EQ(without_strategy(o).fusion_threshold_mb, -1);
}

TEST(DefaultWorldSizes, OneRankPerGpuUpToTheGpusVisible) {
  EXPECT_EQ(default_world_sizes("cpu", 8), "1,2");
  EXPECT_EQ(default_world_sizes("cuda", 0), "1,2");  // the refusal then names the missing GPU
  EXPECT_EQ(default_world_sizes("cuda", 1), "1");
  EXPECT_EQ(default_world_sizes("cuda", 2), "1,2");
  EXPECT_EQ(default_world_sizes("cuda", 3), "1,2,3");
  EXPECT_EQ(default_world_sizes("cuda", 6), "1,2,4,6");
  EXPECT_EQ(default_world_sizes("cuda", 8), "1,2,4,8");
  // --tp: multiples of it only.
  EXPECT_EQ(default_world_sizes("cpu", 0, 2), "2");
  EXPECT_EQ(default_world_sizes("cuda", 1, 2), "2");  // the refusal names the missing GPU
  EXPECT_EQ(default_world_sizes("cuda", 8, 2), "2,4,8");
  EXPECT_EQ(default_world_sizes("cuda", 6, 2), "2,4");
}
}  // namespace dtbench::train
