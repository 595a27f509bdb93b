// Horovod's decisions (train/horovod_plan.h) without communication: fusion
// with its look-ahead, the threshold's rounding, the response cache's bit
// positions and eviction, the coordinator's message table and the wire
// encodings the background loop exchanges.
#include "train/horovod_plan.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace dtbench::train::horovod {
namespace {

Response allreduce(std::size_t t, std::int64_t bytes, int dtype = 0) {
  return {OpType::kAllreduce, dtype, {t}, bytes};
}

TEST(HorovodPlan, FusesInOrderUpToTheThreshold) {
  std::deque<Response> rs{allreduce(0, 40), allreduce(1, 40), allreduce(2, 40), allreduce(3, 10)};
  const auto groups = fuse(rs, 100);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].tensors, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(groups[0].bytes, 80);
  EXPECT_EQ(groups[1].tensors, (std::vector<std::size_t>{2, 3}));
}

TEST(HorovodPlan, LooksPastADifferentDtypeWhileTheSkippedBytesFit) {
  // Tensor 1 (another dtype) is skipped, 2 joins the group, 1 leads the next.
  std::deque<Response> rs{allreduce(0, 30), allreduce(1, 30, 1), allreduce(2, 30), allreduce(3, 60)};
  const auto groups = fuse(rs, 100);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].tensors, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(groups[1].tensors, (std::vector<std::size_t>{1}));
  EXPECT_EQ(groups[2].tensors, (std::vector<std::size_t>{3}));
}

TEST(HorovodPlan, ThresholdZeroFusesNothingAndBroadcastsStayAlone) {
  std::deque<Response> rs{allreduce(0, 4), allreduce(1, 4)};
  EXPECT_EQ(fuse(rs, 0).size(), 2u);
  std::deque<Response> mixed{allreduce(0, 4), {OpType::kBroadcast, 0, {9}, 0}, allreduce(1, 4)};
  const auto groups = fuse(mixed, 1000);
  ASSERT_EQ(groups.size(), 2u);  // the allreduces fuse past the broadcast
  EXPECT_EQ(groups[0].tensors, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(groups[1].type, OpType::kBroadcast);
}

TEST(HorovodPlan, ThresholdRoundsUpToLocalSizeTimes512Bytes) {
  EXPECT_EQ(fusion_threshold_bytes(128 << 20, 2), 128 << 20);
  EXPECT_EQ(fusion_threshold_bytes(1000, 1), 1024);
  EXPECT_EQ(fusion_threshold_bytes(1025, 2), 2048);
  EXPECT_EQ(fusion_threshold_bytes(1024, 3), 1536);
  EXPECT_EQ(fusion_threshold_bytes(0, 4), 0);
}

TEST(HorovodPlan, CacheKeepsBitsInFirstPutOrderAndEvictsTheLeastRecentlyUsed) {
  const std::vector<std::int64_t> bytes{4, 8, 12, 16};
  ResponseCache cache(3);
  Response fused{OpType::kAllreduce, 0, {2, 0}, 16};
  cache.put(fused, bytes);  // split: 2 takes bit 0, 0 bit 1
  cache.put(allreduce(1, 8), bytes);
  EXPECT_EQ(cache.bit(2), 0u);
  EXPECT_EQ(cache.bit(0), 1u);
  EXPECT_EQ(cache.bit(1), 2u);
  EXPECT_EQ(cache.peek(0).bytes, 12);
  cache.get(0);  // tensor 2 is now the most recently used; tensor 0 the least
  cache.put(allreduce(3, 16), bytes);
  EXPECT_FALSE(cache.cached(0));
  EXPECT_EQ(cache.bit(3), 1u) << "the evicted entry's bit is reused";
  EXPECT_EQ(cache.evictions(), 1u);
  EXPECT_EQ(cache.num_active_bits(), 3u);
  ResponseCache off(0);
  off.put(allreduce(1, 8), bytes);
  EXPECT_FALSE(off.cached(1));
}

TEST(HorovodPlan, MessageTableIsReadyWhenEveryRankAsked) {
  MessageTable table(3);
  EXPECT_FALSE(table.add(5));
  EXPECT_FALSE(table.add(5));
  EXPECT_TRUE(table.add(5));
  EXPECT_EQ(table.pending(), 0u);
  EXPECT_FALSE(table.add(5)) << "a new round starts from zero";
}

TEST(HorovodPlan, CacheBitsAndTheirAndAcrossRanks) {
  auto a = encode_cache_bits({0, 2}, false, false, 4);
  auto b = encode_cache_bits({2, 3}, true, false, 4);
  std::vector<std::int32_t> anded(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) anded[i] = std::min(a[i], b[i]);
  const auto agreed = decode_cache_bits(anded);
  EXPECT_EQ(agreed.hits, (std::vector<std::uint32_t>{2}));
  EXPECT_TRUE(agreed.shut_down) << "one rank asking is enough";
  EXPECT_FALSE(agreed.uncached);
  EXPECT_TRUE(decode_cache_bits(encode_cache_bits({}, false, true, 0)).uncached);
}

TEST(HorovodPlan, ResponseListRoundTrips) {
  const std::vector<std::int64_t> bytes{4, 8, 12, 0};
  std::vector<Response> rs{{OpType::kAllreduce, 7, {2, 0}, 16}, {OpType::kBroadcast, 0, {3}, 0}};
  const auto v = encode_responses(rs, true);
  ASSERT_LE(v.size(), max_encoded_responses(4));
  bool shut_down = false;
  const auto back = decode_responses(v.data(), v.size(), shut_down, bytes);
  EXPECT_TRUE(shut_down);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].tensors, rs[0].tensors);
  EXPECT_EQ(back[0].bytes, 16);
  EXPECT_EQ(back[0].dtype, 7);
  EXPECT_EQ(back[1].type, OpType::kBroadcast);
  EXPECT_THROW(decode_responses(v.data(), 4, shut_down, bytes), std::invalid_argument);
}

}  // namespace
}  // namespace dtbench::train::horovod
