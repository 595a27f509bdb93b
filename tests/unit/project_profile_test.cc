// `dtbench project`'s compute profile read from a `dtbench ddp` report
// (phases, fixed cost, buckets and their ready times, measured rows and
// their layouts), rescaled to another batch and length, and built from a
// model's layers; what a report that lacks them is refused with.
#include <gtest/gtest.h>

#include "core/error.h"
#include "project/profile.h"
#include "project/projection.h"
#include "report/ddp_record.h"

namespace dtbench::project {
namespace {

nlohmann::ordered_json ddp_report(bool with_trace, bool with_ready) {
  auto row = [](const std::string& label, const std::string& reducer, int world, double total) {
    report::DdpRun r;
    r.label = label;
    r.reducer = reducer;
    r.world_size = world;
    r.batch_per_rank = 16;
    r.threads = 1;
    // 4 MB of float32 gradients (the buckets below): SGD with momentum holds
    // 12 MB of model state; the peak 6 MB above parameters and momentum.
    r.peak_bytes = 14000000;
    r.model_state_bytes = 12000000;
    for (int k = 0; k < world; ++k) {
      report::RankSamples s;
      s.rank = k;
      s.forward = {0.010, 0.010, 0.010};
      s.backward = {0.020, 0.020, 0.020};
      s.comm_wait = {0, 0, 0};
      s.optimizer = {0.002, 0.002, 0.002};
      s.total = {total, total, total};
      r.ranks.push_back(s);
    }
    return report::to_json(r);
  };
  auto one = row("1N/1R", "ddp", 1, 0.033);
  if (with_trace) {
    nlohmann::ordered_json b0{{"bucket", 0}, {"bytes", 1000000}};
    nlohmann::ordered_json b1{{"bucket", 1}, {"bytes", 3000000}};
    if (with_ready) {
      b0["ready_after_backward_ms_p50"] = 5.0;
      b1["ready_after_backward_ms_p50"] = 20.0;
    }
    one["extras"]["trace"] = {{"backward_compute_ms_p50", 20.0}, {"buckets", {b0, b1}}};
  }
  return {{"schema", "dtbench.ddp"},
          {"config", {{"model", "mlp"}, {"bucket_cap_mb", 25.0}, {"first_bucket_cap_mb", 1.0}}},
          {"runs", {row("no ddp", "none", 1, 0.032), one, row("1N/2R", "ddp", 2, 0.040)}}};
}

TEST(Profile, FromADdpReport) {
  const auto p = profile_from_ddp_report(ddp_report(true, true), "r.json", "");
  EXPECT_EQ(p.model, "mlp");
  EXPECT_EQ(p.batch_per_rank, 16);
  EXPECT_NEAR(p.forward_s, 0.010, 1e-12);
  EXPECT_NEAR(p.backward_s, 0.020, 1e-12);
  EXPECT_NEAR(p.fixed_s, 0.001, 1e-12);  // 1-rank DDP 33 ms - no ddp 32 ms
  ASSERT_EQ(p.grads.size(), 2u);
  EXPECT_NEAR(p.grads[0].ready_s, 0.005, 1e-12);
  EXPECT_EQ(p.grads[1].bytes, 3e6);
  ASSERT_EQ(p.measured.size(), 1u);
  EXPECT_EQ(p.measured[0].world_size, 2);
  EXPECT_NEAR(p.measured[0].seconds, 0.040, 1e-12);
  EXPECT_EQ(p.measured[0].reducer, "ddp");
  EXPECT_EQ(p.measured[0].peak_bytes, 14000000);
  // The "no ddp" row's peak less its parameters and optimizer state (its
  // gradients, the buckets' 4 MB, do not exist yet at that peak).
  EXPECT_EQ(p.activation_bytes, 6000000);
}

// A pipeline's row (dtbench train --pp) is read with its schedule, to be set
// beside a layout's projection of the same pipeline only; never a 1-rank
// calibration.
TEST(Profile, APipelinesRowKeepsItsSchedule) {
  auto doc = ddp_report(true, true);
  auto pp = doc["runs"][2];
  pp["label"] = "1N/2R pp";
  pp["reducer"] = "sync";
  pp["pp"] = 2;
  pp["extras"]["layout"]["pipeline"] = {{"schedule", "gpipe"}, {"microbatches", 4}, {"stages_per_rank", 1}};
  doc["runs"].push_back(pp);
  const auto m = measured_points(doc, "r.json");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].pp, 1);
  EXPECT_EQ(m[0].pp_schedule, "");
  EXPECT_EQ(m[1].pp, 2);
  EXPECT_EQ(m[1].pp_schedule, "gpipe");
  EXPECT_EQ(m[1].microbatches, 4);
  EXPECT_EQ(m[1].stages_per_rank, 1);
  // The profile keeps both measured rows (each projection picks its own:
  // LayoutProjection.MeasuredPipelineRowsMatchTheirSchedule).
  const auto p = profile_from_ddp_report(doc, "r.json", "");
  EXPECT_EQ(p.measured.size(), 2u);
}

TEST(Profile, RescaledToAnotherBatchAndLength) {
  ComputeProfile p;
  p.batch_per_rank = 2;
  p.tokens_per_example = 64;
  p.forward_s = 0.010;
  p.backward_s = 0.020;
  p.optimizer_s = 0.003;
  p.fixed_s = 0.001;
  p.grads = {{4000, 0.005}, {8000, 0.020}};
  p.activation_bytes = 1000;
  p.measured = {{"ddp", 2, 0.05, 9000, 2, 64}, {"ddp", 2, 0.09, 19000, 4, 128}};
  p.one_rank = {{"fsdp", 1, 0.04, 7000, 2, 64}, {"zero2", 1, 0.08, 15000, 4, 128}};
  // Batch 4 of 128 tokens; 2.1 times the multiply-adds per example there.
  rescale_profile(p, 4, 128, 2.1, 200);
  EXPECT_EQ(p.batch_per_rank, 4);
  EXPECT_EQ(p.tokens_per_example, 128);
  EXPECT_NEAR(p.forward_s, 0.010 * 2 * 2.1, 1e-12);
  EXPECT_NEAR(p.backward_s, 0.020 * 2 * 2.1, 1e-12);
  EXPECT_NEAR(p.grads[1].ready_s, 0.020 * 2 * 2.1, 1e-12);
  EXPECT_EQ(p.grads[1].bytes, 8000);                     // the gradients do not change
  EXPECT_EQ(p.optimizer_s, 0.003);                       // nor the step and fixed cost
  EXPECT_EQ(p.fixed_s, 0.001);
  EXPECT_DOUBLE_EQ(p.activation_bytes, 800 * 4 + 200 * 8);  // B·T for most, B·T² for the attention's
  EXPECT_DOUBLE_EQ(p.scale_activations(500), 300 * 4 + 200 * 8);
  EXPECT_DOUBLE_EQ(p.scale_activations(100), 100 * 8);   // never more attention than measured
  // A strategy's 1-rank figure grows by what the profile's activations grow by.
  EXPECT_DOUBLE_EQ(p.rescale_calibrated(700), 700 + (800 * 4 + 200 * 8) - 1000);
  ASSERT_EQ(p.measured.size(), 1u);                      // rows to compare: at the new shape
  EXPECT_EQ(p.measured[0].peak_bytes, 19000);
  ASSERT_EQ(p.one_rank.size(), 1u);                      // rows to calibrate from: at the report's
  EXPECT_EQ(p.one_rank[0].reducer, "fsdp");
  ASSERT_TRUE(p.rescaled.has_value());
  EXPECT_EQ(p.rescaled->batch_per_rank, 2);
  EXPECT_THROW(rescale_profile(p, 8, 128, 1, 0), UsageError);  // once
  ComputeProfile q;
  q.batch_per_rank = 8;
  EXPECT_THROW(rescale_profile(q, 0, 0, 1, 0), UsageError);
  // Not a token model: the batch only, activations linear in it.
  q.activation_bytes = 800;
  rescale_profile(q, 2, 0, 1, 0);
  EXPECT_DOUBLE_EQ(q.activation_bytes, 200);
  ComputeProfile u;  // no activations of its own: a 1-rank figure is scaled itself
  u.batch_per_rank = 2;
  rescale_profile(u, 6, 0, 1, 0);
  EXPECT_DOUBLE_EQ(u.rescale_calibrated(100), 300);
  EXPECT_EQ(q.tokens_per_example, 0);
}

TEST(Profile, GradientsFromLayers) {
  // Three layers in forward order, 1 + 2 + 1 multiply-adds; the middle one
  // reads no parameters (attention's bmm); 10 elements nobody reads.
  const auto g = grads_from_layers({{1, 100}, {2, 0}, {1, 50}}, 160, 0.4);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_DOUBLE_EQ(g[0].bytes, 200);     // the last layer first: ready after its own quarter
  EXPECT_DOUBLE_EQ(g[0].ready_s, 0.1);
  EXPECT_DOUBLE_EQ(g[1].bytes, 400);     // the first layer: ready when backward ends
  EXPECT_DOUBLE_EQ(g[1].ready_s, 0.4);
  EXPECT_DOUBLE_EQ(g[2].bytes, 40);      // the unread parameters, at the end
  EXPECT_DOUBLE_EQ(g[2].ready_s, 0.4);
}

TEST(Profile, SaysWhatTheReportLacks) {
  EXPECT_THROW(profile_from_ddp_report(ddp_report(false, false), "r.json", ""), UsageError);  // no trace
  EXPECT_THROW(profile_from_ddp_report(ddp_report(true, false), "r.json", ""), UsageError);   // no ready times
  EXPECT_THROW(profile_from_ddp_report(ddp_report(true, true), "r.json", "9N/9R"), UsageError);
  EXPECT_THROW(profile_from_ddp_report(ddp_report(true, true), "r.json", "1N/2R"), UsageError);  // not 1 rank
  EXPECT_THROW(profile_from_ddp_report({{"schema", "dtbench.comm"}}, "c.json", ""), UsageError);
}

}  // namespace
}  // namespace dtbench::project
