// --split: nccl-tests' NCCL_TESTS_SPLIT forms and the groups they make.
#include "bench/comm/split.h"

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

}  // namespace
}  // namespace dtbench::bench
