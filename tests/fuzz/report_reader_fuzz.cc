// libFuzzer target: every reader of report files dtbench has — the JSON
// report loader of `dtbench report` (comm, ddp, compare, JSON-lines logs),
// `dtbench diff`'s checks and table, the compare log reader of --resume —
// and the HTML/CSV rendering of whatever they accepted. The contract under
// test: malformed input ends in dtbench::UsageError (exit 2, one line);
// any other exception, a crash or a sanitizer report is a bug.
// Built by tests/fuzz/run_fuzz.sh with clang -fsanitize=fuzzer,address.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>

#include "core/error.h"
#include "report/compare_record.h"
#include "report/ddp_diff.h"
#include "report/csv_report.h"
#include "report/html_report.h"
#include "report/json_io.h"
#include "report/report_data.h"

namespace {

const std::string& scratch_path() {
  static const std::string path = "/tmp/dtbench-fuzz-" + std::to_string(getpid()) + ".json";
  return path;
}

void write_scratch(const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(scratch_path().c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dtbench;
  write_scratch(data, size);
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {  // dtbench report
    const auto src = report::load_report_source(scratch_path());
    std::ostringstream out;
    report::write_html(out, {src}, "fuzz");
    report::write_csv(out, {src});
  } catch (const UsageError&) {
  }
  try {  // dtbench diff (the input against itself)
    const auto doc = report::parse_json_text(text, "fuzz");
    report::check_ddp_report(doc, "fuzz");
    std::ostringstream out;
    report::write_ddp_diff(out, doc, doc, {50, 90});
  } catch (const UsageError&) {
  }
  try {  // --resume
    report::read_compare_log(scratch_path());
  } catch (const UsageError&) {
  }
  return 0;
}
