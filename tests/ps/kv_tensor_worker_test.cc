// The --device cuda kvstore worker (replicas as tensors), run here on CPU
// tensors: the same rounds and exact checks as the host worker, so its logic
// is tested on a machine without a GPU; device_cli.sh runs it on a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/kvstore/kv_tensor_worker.h"
#include "bench/kvstore/kv_worker.h"
#include "bench/kvstore/layout.h"

namespace dtbench::bench::kv {
namespace {

KvOptions options(KvMode mode, int replicas) {
  KvOptions o;
  o.mode = mode;
  o.workers = 1;
  o.servers = 0;
  o.replicas = replicas;
  o.arrays = uniform_arrays(3, 4096 + 36);  // not a multiple of the data's periods
  o.iters = 3;
  o.warmup = 0;
  return o;
}

class TensorWorker : public ::testing::TestWithParam<KvMode> {};

TEST_P(TensorWorker, RoundsAreExactLikeTheHostWorker) {
  const auto o = options(GetParam(), 3);
  const auto layout = plan_layout(o.arrays, 1, o.bigarray_bound);
  KvTensorWorker tensors(o, layout, 0, c10::Device(c10::DeviceType::CPU));
  KvWorker host(o, layout, 0);
  host.set_allreduce([](const auto&) {});  // one worker: nothing to reduce across
  std::vector<std::int64_t> started_t, started_h;  // the round-start hook, once per round, in order
  tensors.set_round_start([&](std::int64_t r) { started_t.push_back(r); });
  host.set_round_start([&](std::int64_t r) { started_h.push_back(r); });
  for (int round = 0; round < 3; ++round) {
    const auto t = tensors.run(round);
    const auto h = host.run(round);
    ASSERT_FALSE(std::isnan(t.error)) << "round " << round << " was not checked";
    EXPECT_EQ(t.error, 0) << "round " << round;
    EXPECT_EQ(h.error, 0) << "round " << round;
    EXPECT_GT(t.seconds, 0);
    EXPECT_EQ(t.gbps > 0, h.gbps > 0);  // the same bytes counted (none across one worker in device mode)
  }
  EXPECT_EQ(started_t, (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(started_t, started_h);
}

INSTANTIATE_TEST_SUITE_P(Modes, TensorWorker, ::testing::Values(KvMode::kLocal, KvMode::kDevice),
                         [](const auto& info) { return to_string(info.param); });

}  // namespace
}  // namespace dtbench::bench::kv
