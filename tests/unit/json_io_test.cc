#include "report/json_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"

namespace dtbench::report {
namespace {

class JsonIo : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dtbench-json-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string path(const std::string& name) { return dir_ + "/" + name; }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(path(name)) << text;
  }
  std::string dir_;
};

TEST_F(JsonIo, WritesAtomicallyAndReadsBack) {
  Json doc{{"schema", "dtbench.comm"}, {"values", {1, 2, 3}}};
  write_json_atomic(path("r.json"), doc);
  EXPECT_EQ(read_json_file(path("r.json")), doc);
  // No temporary file is left beside it.
  EXPECT_EQ(std::system(("ls " + dir_ + " | grep -q tmp").c_str()) == 0, false);
}

TEST_F(JsonIo, APlantedSymlinkIsNeverFollowed) {
  // Another local user can read the report's path in /proc/PID/cmdline and
  // plant symlinks at the temporary names a writer would predict (the old
  // "<path>.tmp.<pid>"): the write must neither follow nor truncate them.
  write("victim", "precious");
  for (const auto& name : {"r.json.tmp." + std::to_string(getpid()), std::string("r.json.tmp")})
    ASSERT_EQ(symlink(path("victim").c_str(), path(name).c_str()), 0);
  write_json_atomic(path("r.json"), Json{{"a", 1}});
  std::ifstream in(path("victim"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "precious");
  EXPECT_EQ(read_json_file(path("r.json"))["a"], 1);
  struct stat st {};
  ASSERT_EQ(lstat(path("r.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0644 & ~mask);  // a report, not a private file
}

TEST_F(JsonIo, FailedWriteKeepsOldFile) {
  write_json_atomic(path("r.json"), Json{{"a", 1}});
  EXPECT_THROW(write_json_atomic(path("missing-dir/r.json"), Json{{"a", 2}}), IoError);
  EXPECT_EQ(read_json_file(path("r.json"))["a"], 1);
}

TEST_F(JsonIo, AppendsJsonLines) {
  append_jsonl(path("p.jsonl"), Json{{"i", 1}});
  append_jsonl(path("p.jsonl"), Json{{"i", 2}});
  std::ifstream in(path("p.jsonl"));
  std::string a, b;
  std::getline(in, a);
  std::getline(in, b);
  EXPECT_EQ(Json::parse(b)["i"], 2);
}

TEST_F(JsonIo, BadFilesAreUsageErrors) {
  write("empty.json", "");
  write("blank.json", "  \n");
  write("trunc.json", "{\"a\": [1, 2");
  write("garbage.json", "not json");
  for (const char* name : {"empty.json", "blank.json", "trunc.json", "garbage.json", "absent.json"})
    EXPECT_THROW(read_json_file(path(name)), UsageError) << name;
  EXPECT_THROW(read_json_file(dir_), UsageError);  // a directory
}

TEST_F(JsonIo, WritablePathCheck) {
  EXPECT_NO_THROW(require_writable_path(path("new.json"), "--json"));
  EXPECT_NO_THROW(require_writable_path("relative.json", "--json"));
  EXPECT_THROW(require_writable_path(dir_, "--json"), UsageError);
  EXPECT_THROW(require_writable_path(path("missing/new.json"), "--json"), UsageError);
  EXPECT_THROW(require_writable_path("", "--json"), UsageError);
}

}  // namespace
}  // namespace dtbench::report
