// `dtbench diff BASE.json TEST.json`: A/B comparison of two `dtbench ddp`
// reports (PyTorch's benchmarks/distributed/ddp/diff.py, any percentiles).
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "report/ddp_diff.h"
#include "report/ddp_record.h"
#include "report/json_io.h"

namespace dtbench::cli {
namespace {

struct DiffFlags {
  std::string base, test;
  std::string percentiles = "75,95";  // diff.py's
};

int run_diff(const DiffFlags& f) {
  const auto pcts = report::parse_percentiles(f.percentiles, "--percentiles");
  const auto base = report::read_json_file(f.base);
  const auto test = report::read_json_file(f.test);
  report::check_ddp_report(base, f.base);
  report::check_ddp_report(test, f.test);
  // Rendered first: a file that turns out malformed prints nothing but the error.
  std::ostringstream text;
  text << "base: " << f.base << "\ntest: " << f.test << "\n\n";
  report::write_ddp_diff(text, base, test, pcts);
  std::cout << text.str();
  return 0;
}

}  // namespace

Action register_diff(CLI::App& app) {
  auto f = std::make_shared<DiffFlags>();
  auto* cmd = app.add_subcommand(
      "diff", "Compare two `dtbench ddp` JSON reports as PyTorch's diff.py (diff > 0: TEST is faster)");
  cmd->add_option("BASE", f->base, "Baseline report (JSON from dtbench ddp --json)")->required();
  cmd->add_option("TEST", f->test, "Report to compare against the baseline")->required();
  cmd->add_option("--percentiles", f->percentiles, "Percentiles to compare")->capture_default_str();
  return [f]() { return run_diff(*f); };
}

}  // namespace dtbench::cli
