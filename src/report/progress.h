#pragma once
// Progress of a long sweep on stderr: a bar redrawn in place on a terminal
// ("[#####.....] 3/12 points  elapsed 1m02s  eta 3m10s  overlap+fp16 2R"),
// one plain line per step otherwise (logs, CI).
#include <chrono>
#include <ostream>
#include <string>

namespace dtbench::report {

// "1m02s", "45s", "2h03m"; "?" for a negative or non-finite value.
std::string format_eta(double seconds);

// The bar line (no newline): done of total, elapsed, estimate, label.
std::string progress_line(int done, int total, double elapsed_s, double eta_s,
                          const std::string& label, int bar_width = 20);

class ProgressBar {
 public:
  // `total` steps, `skipped` of which were done before (resumed): they count
  // as done but not into the rate the estimate is taken from.
  ProgressBar(std::ostream& out, bool terminal, int total, int skipped);
  // About to start a step named `label`.
  void start(const std::string& label);
  // The step finished.
  void step_done();
  // Ends the bar's line (terminal).
  void finish();

 private:
  void draw(const std::string& label);
  std::ostream& out_;
  bool terminal_;
  int total_, skipped_, done_;
  std::chrono::steady_clock::time_point begin_;
};

}  // namespace dtbench::report
