// --split: nccl-tests' NCCL_TESTS_SPLIT forms and the groups they make.
#include "bench/comm/split.h"
#include "bench/comm/vsplit.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace dtbench::bench {
namespace {

using Groups = std::vector<std::vector<int>>;

TEST(Split, FormsMakeNcclTestsGroups) {
  // 8 ranks as 2 nodes of 4: mod:4 pairs the same local rank of each node,
  // div:4 is each node, and:3 is mod:4 again, and:0 is the whole job.
  EXPECT_EQ(split_groups(parse_split("mod:4"), 8), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(split_groups(parse_split("div:4"), 8), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(split_groups(parse_split("and:0x3"), 8), split_groups(parse_split("mod:4"), 8));
  EXPECT_EQ(split_groups(parse_split("and:0"), 8), (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(split_groups(parse_split(""), 3), (Groups{{0, 1, 2}}));
  // Uneven: div:3 of 4 ranks.
  EXPECT_EQ(split_groups(parse_split("div:3"), 4), (Groups{{0, 1, 2}, {3}}));
  EXPECT_EQ(split_colour(parse_split("and:6"), 7), 6);
}

// --groups: a layout's groups by name, in `dtbench train`'s mesh order (pp
// outermost, tp innermost), so tp groups are consecutive ranks and dp groups
// ranks tp apart.
TEST(Split, GroupsByLayoutName) {
  EXPECT_EQ(split_groups(parse_groups("tp=2"), 8), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(split_groups(parse_groups("dp,tp=2"), 8), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(split_groups(parse_groups("dp=2,tp=2,pp=2"), 8), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(split_groups(parse_groups("pp=2,tp=2"), 8), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(split_groups(parse_groups("tp=4"), 8), split_groups(parse_split("div:4"), 8));
  EXPECT_EQ(split_groups(parse_groups("dp"), 4), (Groups{{0, 1, 2, 3}}));
  EXPECT_EQ(describe_split(parse_groups("dp,tp=2")), "--groups dp,tp=2");
  EXPECT_EQ(describe_split(parse_split("mod:2")), "--split mod:2");
  // Degrees that do not fit the world are refused naming --groups.
  for (const char* text : {"tp=3", "dp=3,tp=2", "tp", "dp,tp=8", "pp"}) {
    try {
      split_groups(parse_groups(text), 8);
      ADD_FAILURE() << text << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--groups '"), std::string::npos) << e.what();
    }
  }
  for (const char* bad : {"", "ep=2", "tp=0", "tp=x", "tp=2,tp=2", "tp,tp=2", "tp=2,"}) {
    try {
      parse_groups(bad);
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--groups '"), std::string::npos) << e.what();
    }
  }
}

TEST(Split, BadFormsAreRefusedNamingTheFlag) {
  for (const char* bad : {"mod", "mod:", "mod:0", "div:-2", "and:-1", "xor:3", "mod:3x", "4"}) {
    try {
      parse_split(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--split '"), std::string::npos) << e.what();
    }
  }
}

// --split-sizes: alltoallv's parts. Every row sums to the count; skewed
// pairs move in proportion to 1 + (i + j) mod n; random repeats with its seed.
TEST(VSplit, RowsSumToTheCountInEveryKind) {
  for (const char* text : {"uniform", "skewed", "random", "random:9"})
    for (int n : {1, 2, 3, 8})
      for (std::int64_t count : {0, 1, 5, 1000, 1 << 20}) {
        const auto m = vsplit_matrix(parse_vsplit(text), n, count, 42);
        ASSERT_EQ(m.size(), static_cast<std::size_t>(n));
        for (const auto& row : m) {
          std::int64_t sum = 0;
          for (auto x : row) {
            EXPECT_GE(x, 0);
            sum += x;
          }
          EXPECT_EQ(sum, count) << text << " n=" << n;
        }
      }
}

TEST(VSplit, SkewedAndRandomParts) {
  const auto u = vsplit_matrix(parse_vsplit("uniform"), 4, 4000, 1);
  EXPECT_EQ(u[1], (std::vector<std::int64_t>{1000, 1000, 1000, 1000}));
  // 4 ranks, rank 0: weights 1, 2, 3, 4 of 10.
  const auto s = vsplit_matrix(parse_vsplit("skewed"), 4, 4000, 1);
  EXPECT_EQ(s[0], (std::vector<std::int64_t>{400, 800, 1200, 1600}));
  EXPECT_EQ(s[3], (std::vector<std::int64_t>{1600, 400, 800, 1200}));
  // random: the given seed, or the run's; the same call, the same parts.
  EXPECT_EQ(vsplit_matrix(parse_vsplit("random:9"), 4, 4000, 1), vsplit_matrix(parse_vsplit("random:9"), 4, 4000, 2));
  EXPECT_EQ(vsplit_matrix(parse_vsplit("random"), 4, 4000, 3), vsplit_matrix(parse_vsplit("random"), 4, 4000, 3));
  EXPECT_NE(vsplit_matrix(parse_vsplit("random"), 4, 4000, 3), vsplit_matrix(parse_vsplit("random"), 4, 4000, 4));
  EXPECT_NE(vsplit_matrix(parse_vsplit("random"), 4, 4000, 3), u);
}

// The v-collectives' per-rank parts: they sum to the count in every kind;
// skewed gives rank i a share in proportion to 1 + i; random repeats with its
// seed and differs from uniform.
TEST(VSplit, RankPartsOfTheVCollectives) {
  for (const char* text : {"uniform", "skewed", "random", "random:9"})
    for (int n : {1, 2, 3, 8})
      for (std::int64_t count : {0, 1, 5, 1000, 1 << 20}) {
        const auto parts = vsplit_counts(parse_vsplit(text), n, count, 42);
        ASSERT_EQ(parts.size(), static_cast<std::size_t>(n));
        std::int64_t sum = 0;
        for (auto x : parts) {
          EXPECT_GE(x, 0);
          sum += x;
        }
        EXPECT_EQ(sum, count) << text << " n=" << n;
      }
  EXPECT_EQ(vsplit_counts(parse_vsplit("uniform"), 4, 4003, 1), (std::vector<std::int64_t>{1000, 1000, 1000, 1003}));
  EXPECT_EQ(vsplit_counts(parse_vsplit("skewed"), 4, 4000, 1), (std::vector<std::int64_t>{400, 800, 1200, 1600}));
  EXPECT_EQ(vsplit_counts(parse_vsplit("random:9"), 4, 4000, 1), vsplit_counts(parse_vsplit("random:9"), 4, 4000, 2));
  EXPECT_NE(vsplit_counts(parse_vsplit("random"), 8, 4000, 3), vsplit_counts(parse_vsplit("random"), 8, 4000, 4));
  EXPECT_NE(vsplit_counts(parse_vsplit("random"), 8, 4000, 3), vsplit_counts(parse_vsplit("uniform"), 8, 4000, 3));
}

TEST(VSplit, BadSpecsAreRefused) {
  for (const char* bad : {"", "even", "random:", "random:x", "skewed:2", "random:-1"})
    EXPECT_THROW(parse_vsplit(bad), UsageError) << bad;
}

}  // namespace
}  // namespace dtbench::bench
