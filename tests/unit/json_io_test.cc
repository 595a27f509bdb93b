#include "report/json_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

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
