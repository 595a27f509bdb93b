#include "core/units.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/paths.h"

namespace dtbench {

TEST(Units, ParseBytes) {
  EXPECT_EQ(parse_bytes("0", "x"), 0u);
  EXPECT_EQ(parse_bytes("1024", "x"), 1024u);
  EXPECT_EQ(parse_bytes("1K", "x"), 1024u);
  EXPECT_EQ(parse_bytes("4KiB", "x"), 4096u);
  EXPECT_EQ(parse_bytes("64M", "x"), 64u << 20);
  EXPECT_EQ(parse_bytes("1G", "x"), 1u << 30);
  EXPECT_EQ(parse_bytes("0.5K", "x"), 512u);
}

TEST(Units, ParseBytesRejects) {
  for (const char* bad : {"", "-1", "abc", "12Q", "1e30", "0.3", "nan", "inf"})
    EXPECT_THROW(parse_bytes(bad, "--min-bytes"), UsageError) << bad;
  try {
    parse_bytes("-5", "--min-bytes");
    ADD_FAILURE() << "-5 was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--min-bytes"), std::string::npos);
  }
}

TEST(Units, ParseDuration) {
  EXPECT_EQ(parse_duration("30", "t").count(), 30000);
  EXPECT_EQ(parse_duration("30s", "t").count(), 30000);
  EXPECT_EQ(parse_duration("500ms", "t").count(), 500);
  EXPECT_EQ(parse_duration("2m", "t").count(), 120000);
  for (const char* bad : {"0", "-1s", "x", "5h", "100000m"})
    EXPECT_THROW(parse_duration(bad, "--timeout"), UsageError) << bad;
}

TEST(Units, FormatBytes) {
  EXPECT_EQ(format_bytes(3), "3 B");
  EXPECT_EQ(format_bytes(1024), "1 KiB");
  EXPECT_EQ(format_bytes(64u << 20), "64 MiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
}

}  // namespace dtbench

namespace dtbench {
TEST(Units, SplitListKeepsEmptyItems) {
  EXPECT_EQ(split_list("a,b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split_list("a,,b"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split_list(""), (std::vector<std::string>{""}));
  EXPECT_EQ(split_list("x,"), (std::vector<std::string>{"x", ""}));
}
}  // namespace dtbench

namespace dtbench {
namespace {

TEST(Units, ParseNumberTakesWholeFiniteNumbersOnly) {
  EXPECT_EQ(parse_number("2"), 2.0);
  EXPECT_EQ(parse_number("0.05"), 0.05);
  EXPECT_EQ(parse_number("1e3"), 1000.0);
  EXPECT_EQ(parse_number("-1"), -1.0);
  EXPECT_FALSE(parse_number(""));
  EXPECT_FALSE(parse_number("ten"));
  EXPECT_FALSE(parse_number("5MB"));
  EXPECT_FALSE(parse_number("inf"));
  EXPECT_FALSE(parse_number("nan"));
}

// --trace's per-row files and --torch-profiler's per-rank files are named
// by the same rule.
TEST(Paths, InsertBeforeExtension) {
  EXPECT_EQ(insert_before_extension("trace.json", "1N-2R", ".json"), "trace.1N-2R.json");
  EXPECT_EQ(insert_before_extension("out/trace", "1N-2R", ".json"), "out/trace.1N-2R.json");
  EXPECT_EQ(insert_before_extension("a.d/trace", "rank1"), "a.d/trace.rank1");
  EXPECT_EQ(insert_before_extension("dir/.hidden", "rank0"), "dir/.hidden.rank0");
  EXPECT_EQ(insert_before_extension("prof.1N-2R.json", "rank1"), "prof.1N-2R.rank1.json");
}

}  // namespace
}  // namespace dtbench
