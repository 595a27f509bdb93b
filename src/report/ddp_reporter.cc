#include "report/ddp_reporter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "stats/stats.h"

namespace dtbench::report {

std::string percentile_name(double p) { return fmt::format("p{:g}", p); }

void DdpConsoleReporter::header(const std::string& model, long long batch_per_rank,
                                const std::string& details) {
  out_ << fmt::format("\nBenchmark: {} with batch size {}{}\n\n", model, batch_per_rank,
                      details.empty() ? "" : " (" + details + ")");
  std::string line(22, ' ');
  for (std::size_t i = 0; i < percentiles_.size(); ++i)
    line += fmt::format("{:>3} {:>8}  {:>8}", "", "sec/iter", "ex/sec");
  out_ << line << "  slowest p50   job ex/s  rank p50 spread  threads/rank\n";
  out_.flush();
}

void DdpConsoleReporter::row(const DdpRun& run) {
  // benchmark.py's columns: every rank's iterations pooled, examples/s per
  // rank; then the job's: the slowest rank per iteration, all ranks' examples.
  const auto times = pooled_times(run);
  std::string line = fmt::format("{} ranks -- {:>8}:  ", run.world_size, run.label);
  for (double p : percentiles_) {
    const double t = stats::percentile(times, p);
    // "%6d/s" % (nelem / v): truncated, as benchmark.py prints it.
    line += fmt::format("{}: {:.3f}s {:>6}/s  ", percentile_name(p), t,
                        t > 0 ? static_cast<long long>(run.examples_per_rank() / t) : 0LL);
  }
  line += fmt::format("{:>10.3f}s {:>10.0f}", stats::percentile(slowest_rank_times(run), 50),
                      job_examples_per_sec(run, 50));
  line += fmt::format("  {:14.1f}%", rank_p50_spread_percent(run));
  if (run.threads > 0) line += fmt::format("  {:>16}", run.threads);
  out_ << line << "\n";
  if (run.train_flops_per_example > 0) {
    std::string flops = fmt::format("      {:.3g} GFLOP/example to train: {:.4f} TFLOP/s per rank at p50",
                                    run.train_flops_per_example / 1e9, achieved_tflops_per_rank(run));
    if (run.peak_tflops > 0)
      flops += fmt::format(", MFU {:.1f}% of {:g} TFLOP/s", 100 * model_flops_utilization(run),
                           run.peak_tflops);
    if (run.tokens_per_example > 0)
      flops += fmt::format(", {:.0f} tokens/s per rank", tokens_per_sec_per_rank(run));
    out_ << flops << "\n";
  }
  if (run.peak_bytes >= 0 || run.model_state_bytes >= 0) {
    std::string mem = "      memory per rank:";
    if (run.peak_bytes >= 0) mem += fmt::format(" peak {:.1f} MiB of tensors", run.peak_bytes / 1048576.0);
    if (run.peak_rss_bytes >= 0) mem += fmt::format(" (process RSS peak {:.1f} MiB)", run.peak_rss_bytes / 1048576.0);
    if (run.model_state_bytes >= 0)
      mem += fmt::format("{} model state {:.1f} MiB", run.peak_bytes >= 0 ? "," : "",
                         run.model_state_bytes / 1048576.0);
    if (run.model_state_expected_bytes >= 0)
      mem += fmt::format(" (formula {:.1f} MiB)", run.model_state_expected_bytes / 1048576.0);
    out_ << mem << "\n";
  }
  if (run.nodes > 1)
    for (const auto& n : per_node_figures(run))
      out_ << fmt::format("      node {} (ranks {}): p50 {:.3f}s {:>6.0f}/s, comm_wait p50 {:.4f}s\n",
                          n.node, fmt::join(n.ranks, ","), n.p50_total, n.examples_per_sec,
                          n.p50_comm_wait);
  out_.flush();
}

void DdpConsoleReporter::phases(const std::vector<DdpRun>& runs) {
  bool device = !runs.empty();
  for (const auto& run : runs) device = device && has_device_phases(run);
  out_ << fmt::format("\nPhases, p50 seconds (per iteration, slowest rank{}):\n",
                      device ? "; GPU time by CUDA events" : "");
  out_ << fmt::format("{:>10}  {:>8}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}\n", "", "reducer", "forward",
                      "backward", "comm_wait", "optimizer", "total");
  for (const auto& run : runs) {
    std::string line = fmt::format("{:>10}  {:>8}", run.label, run.reducer);
    for (const char* p : kPhaseNames)
      line += fmt::format("  {:>9.4f}",
                          stats::percentile(device ? device_phase_times(run, p) : phase_times(run, p), 50));
    out_ << line << "\n";
  }
  out_.flush();
}

}  // namespace dtbench::report
