#include "report/progress.h"

#include <cmath>

#include <fmt/format.h>

namespace dtbench::report {

std::string format_eta(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60);
}

std::string progress_line(int done, int total, double elapsed_s, double eta_s,
                          const std::string& label, int bar_width) {
  const int filled = total > 0 ? std::min(bar_width, done * bar_width / total) : bar_width;
  return fmt::format("[{}{}] {}/{} points  elapsed {}  eta {}{}{}", std::string(filled, '#'),
                     std::string(bar_width - filled, '.'), done, total, format_eta(elapsed_s),
                     format_eta(eta_s), label.empty() ? "" : "  ", label);
}

ProgressBar::ProgressBar(std::ostream& out, bool terminal, int total, int skipped)
    : out_(out), terminal_(terminal), total_(total), skipped_(skipped), done_(skipped),
      begin_(std::chrono::steady_clock::now()) {}

void ProgressBar::draw(const std::string& label) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
  const int run = done_ - skipped_;
  const double eta = run > 0 ? elapsed / run * (total_ - done_) : -1;
  const auto line = progress_line(done_, total_, elapsed, eta, label);
  if (terminal_)
    out_ << "\r\033[K" << line << std::flush;
  else
    out_ << line << "\n" << std::flush;
}

void ProgressBar::start(const std::string& label) { draw("running " + label); }

void ProgressBar::step_done() {
  ++done_;
  draw("");
}

void ProgressBar::finish() {
  if (terminal_) out_ << "\n" << std::flush;
}

}  // namespace dtbench::report
