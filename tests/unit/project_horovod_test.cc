// `dtbench project --reducer horovod` on literal inputs: Horovod's
// background loop worked by hand (cycles, negotiation, fusion up to the
// threshold), and its rows and memory through project().
#include <gtest/gtest.h>

#include "project/horovod_time.h"
#include "project/projection.h"

namespace dtbench::project {
namespace {

TEST(HorovodTime, CyclesFuseAndNegotiateByHand) {
  ComputeProfile p;
  p.forward_s = 1;
  p.backward_s = 2;
  p.optimizer_s = 0.8;
  HorovodOptions o;
  o.cycle_s = 1;
  o.threshold_bytes = 150;
  const auto allreduce = [](double bytes) { return bytes / 100; };
  // Cycle at 0: nothing ready. At 1: both 100-byte gradients (ready at 0.5),
  // two groups (200 > 150), 0.1 + 1 + 1 -> done at 3.1; the next cycle
  // starts then (its work outlasted the cycle) and takes the 200-byte one
  // (ready at 1.7): 0.1 + 2 -> done at 5.2.
  const auto t = horovod_time(p, {{200, 1.7}, {100, 0.5}, {100, 0.5}}, allreduce, 0.1, o);
  EXPECT_NEAR(t.iteration_s, 1 + 5.2 + 0.8, 1e-12);
  EXPECT_NEAR(t.exposed_s, 3.2, 1e-12);
  EXPECT_NEAR(t.comm_s, 4.2, 1e-12);
  EXPECT_EQ(t.collectives, 3);
  // A threshold that holds both: one group in the first cycle.
  o.threshold_bytes = 1000;
  EXPECT_EQ(horovod_time(p, {{100, 0.5}, {100, 0.5}}, allreduce, 0.1, o).collectives, 1);
  // Everything ready early and cheap: hidden behind backward.
  const auto hidden = horovod_time(p, {{1, 0.1}}, allreduce, 0, o);
  EXPECT_DOUBLE_EQ(hidden.iteration_s, 1 + 2 + 0.8);
  EXPECT_DOUBLE_EQ(hidden.exposed_s, 0);
  // A gradient ready a hair after a cycle boundary waits one whole cycle
  // (this once looped for ever: ceil of a rounding residue is 0).
  const auto hair = horovod_time(p, {{1, 1.0 + 1e-13}}, allreduce, 0, o);
  EXPECT_NEAR(hair.iteration_s, 1 + 2.01 + 0.8, 1e-9);
}

TEST(HorovodProjection, RowsAndFusionBuffer) {
  ComputeProfile p;
  p.source = "test";
  p.batch_per_rank = 4;
  p.forward_s = 0.01;
  p.backward_s = 0.02;
  p.optimizer_s = 0.002;
  p.grads = {{4e6, 0.005}, {4e6, 0.02}};
  ProjectOptions o;
  o.strategy = Strategy::kHorovod;
  o.net.ranks_per_node = 1;
  o.net.inter = {1e-5, 1e9, {}, "", {}};
  o.world_sizes = {1, 4};
  o.horovod.threshold_bytes = 64.0 * 1024 * 1024;
  const auto rows = project(p, o);
  EXPECT_EQ(rows[0].strategy, "horovod");
  EXPECT_DOUBLE_EQ(rows[0].iteration_s, 0.032);  // one rank: nothing to wait for
  EXPECT_GT(rows[1].iteration_s, rows[0].iteration_s);
  EXPECT_GT(rows[1].collectives, 0);
  EXPECT_DOUBLE_EQ(rows[1].memory.buffers, 64.0 * 1024 * 1024);  // the fusion buffer
  EXPECT_DOUBLE_EQ(rows[1].memory.model_states(), 12 * 2e6);      // Ψ = 2e6, SGD with momentum
  o.wire_ratio = 0.5;  // Horovod's fp16 compression: half the bytes, less time
  EXPECT_LT(project(p, o)[1].iteration_s, rows[1].iteration_s);
  EXPECT_TRUE(measured_as(Strategy::kHorovod, "horovod"));
  EXPECT_FALSE(measured_as(Strategy::kDdp, "horovod"));
  EXPECT_TRUE(measured_as(Strategy::kDdp, "overlap"));
}

}  // namespace
}  // namespace dtbench::project
