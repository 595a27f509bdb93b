// --bind: the plan (pure), its text forms, and a launched worker really
// pinned (a real process reads its own Cpus_allowed_list).
#include "launch/binding.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "launch/launcher.h"

namespace dtbench::launch {
namespace {

TEST(Binding, ParsesItsModes) {
  EXPECT_EQ(parse_bind("none"), Bind::none);
  EXPECT_EQ(parse_bind("core"), Bind::core);
  EXPECT_THROW(parse_bind("socket"), UsageError);
  EXPECT_THROW(parse_bind(""), UsageError);
}

TEST(Binding, NoneIsNoPlan) {
  EXPECT_TRUE(plan_binding(Bind::none, {{0}, {1}}, 4).empty());
}

TEST(Binding, OneCoreEachInOrder) {
  const auto plan = plan_binding(Bind::core, {{0}, {1}}, 2);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0], CpuList({0}));
  EXPECT_EQ(plan[1], CpuList({1}));
}

TEST(Binding, WholeCoresWithTheirHyperthreadsAndEqualShares) {
  // 5 cores of 2 hyperthreads (0+8, 1+9, ...), 2 ranks: 2 cores each, core 4 unused.
  const std::vector<CpuList> cores{{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}};
  const auto plan = plan_binding(Bind::core, cores, 2);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0], CpuList({0, 8, 1, 9}));
  EXPECT_EQ(plan[1], CpuList({2, 10, 3, 11}));
  EXPECT_EQ(describe_cpus(plan[1]), "2-3,10-11");
}

TEST(Binding, FewerCoresThanRanksIsRefusedNamingBoth) {
  try {
    plan_binding(Bind::core, {{0, 2}, {1, 3}}, 3);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("3 ranks"), std::string::npos) << what;
    EXPECT_NE(what.find("2 core(s) (CPUs 0-3)"), std::string::npos) << what;
  }
}

TEST(Binding, DescribesCpuLists) {
  EXPECT_EQ(describe_cpus({}), "");
  EXPECT_EQ(describe_cpus({3}), "3");
  EXPECT_EQ(describe_cpus({5, 0, 1, 2, 8, 9, 2}), "0-2,5,8-9");
}

TEST(Binding, PlanTravelsThroughItsEnvironmentText) {
  const std::vector<CpuList> plan{{0, 1, 2, 3}, {4, 6}, {7}};
  EXPECT_EQ(encode_plan(plan), "0-3;4,6;7");
  EXPECT_EQ(decode_plan(encode_plan(plan)), plan);
  for (const char* bad : {"", ";", "0;", "a", "1-", "3-1", "0-2x", "-1", "0,,1", "99999"})
    EXPECT_THROW(decode_plan(bad), UsageError) << "'" << bad << "'";
}

TEST(Binding, AllowedCoresCoverThisProcessesCpus) {
  CpuList all;
  for (const auto& core : allowed_cores()) {
    EXPECT_FALSE(core.empty());
    all.insert(all.end(), core.begin(), core.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, current_affinity());
}

TEST(Binding, LaunchedWorkerRunsOnlyOnItsCpus) {
  const int cpu = current_affinity().back();
  char tmpl[] = "/tmp/dtbench-bind-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  LaunchOptions o;
  o.nproc_per_node = 1;
  o.cpu_sets = {{cpu}};
  const auto r = launch(o, {"/bin/sh", "-c",
                            "grep Cpus_allowed_list /proc/self/status | cut -f2 > " + dir + "/cpus"});
  EXPECT_EQ(r.exit_code, 0);
  std::ifstream in(dir + "/cpus");
  std::string seen;
  in >> seen;
  EXPECT_EQ(seen, std::to_string(cpu));
  std::system(("rm -rf " + dir).c_str());
}

TEST(Binding, CpuSetsMustMatchTheWorkers) {
  LaunchOptions o;
  o.nproc_per_node = 2;
  o.cpu_sets = {{0}};
  EXPECT_THROW(launch(o, {"/bin/true"}), UsageError);
}

}  // namespace
}  // namespace dtbench::launch
