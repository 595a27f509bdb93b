#include "job/job_reporter.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/units.h"
#include "stats/stats.h"

namespace dtbench::job {
namespace {

std::string size_text(int64_t bytes) { return bytes < 0 ? "?" : format_bytes(static_cast<uint64_t>(bytes)); }

std::string steps_text(const RankTrace& r) {
  if (r.step_numbers.empty()) return "no ProfilerStep";
  if (r.step_numbers.size() == 1) return fmt::format("ProfilerStep#{}", r.step_numbers.front());
  return fmt::format("ProfilerStep#{}-{}", r.step_numbers.front(), r.step_numbers.back());
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 8 && ranks.size() > 10) return s + fmt::format(",... ({} ranks)", ranks.size());
    s += (i ? "," : "") + std::to_string(ranks[i]);
  }
  return s;
}

double median_of(const std::vector<StepFigures>& steps, int rank, double StepFigures::*field) {
  std::vector<double> v;
  for (const auto& f : steps)
    if (f.rank == rank) v.push_back(f.*field);
  return v.empty() ? 0 : stats::median(v);
}

}  // namespace

void write_job_text(std::ostream& os, const JobTrace& job, const JobSummary& s) {
  const RankTrace& r0 = job.ranks.front();
  os << fmt::format("# dtbench trace read: {} of {} rank(s), backend {}, {}, {}; from {}\n", job.ranks.size(),
                    job.world_size, r0.backend.empty() ? "?" : r0.backend, r0.device, steps_text(r0), job.source);
  for (const auto& g : r0.groups)
    os << fmt::format("# group {} ({}, {}): ranks {}\n", g.name, g.desc, g.backend, ranks_text(g.ranks));
  for (const auto& k : job.skipped) os << "# skipped " << k << "\n";
  if (s.without_run > 0)
    os << fmt::format("# {} of {} collectives have no execution span in the trace (time, algbw: of the rest)\n",
                      s.without_run, s.collectives);
  if (s.outside_steps > 0)
    os << fmt::format("# {} collectives were issued outside every ProfilerStep (in the classes, not the steps)\n",
                      s.outside_steps);

  for (const auto& r : job.ranks)
    if (!r.pairing_note.empty()) os << "# rank " << r.rank << ": " << r.pairing_note << "\n";
  if (!s.unchecked_note.empty()) os << "# the ranks' collectives not checked for agreement: " << s.unchecked_note << "\n";
  if (!s.split && job.ranks.size() > 1)
    os << "# communication not split into waiting and moving: " << s.split_note << "\n";

  os << "\nPer rank (medians over its iterations):\n";
  os << fmt::format("{:>5} {:>6} {:>10} {:>11} {:>9} {:>9} {:>11} {:>10} {:>11} {:>10}\n", "rank", "iters",
                    "step ms", "compute ms", "comm ms", "wait ms", "exposed ms", "overlap %", "colls/iter", "MB/iter");
  for (const auto& r : job.ranks) {
    const double comm = median_of(s.steps, r.rank, &StepFigures::comm_us);
    // overlap %: the median of each step's own share (medians of the parts
    // could come from different steps).
    std::vector<double> colls, bytes, shares;
    for (const auto& f : s.steps)
      if (f.rank == r.rank) {
        colls.push_back(f.collectives);
        bytes.push_back(static_cast<double>(f.bytes));
        if (f.comm_us > 0) shares.push_back(100 * f.overlapped_us / f.comm_us);
      }
    os << fmt::format("{:>5} {:>6} {:>10.3f} {:>11.3f} {:>9.3f} {:>9} {:>11.3f} {:>10} {:>11} {:>10.2f}\n", r.rank,
                      r.steps.size(), median_of(s.steps, r.rank, &StepFigures::time_us) / 1e3,
                      median_of(s.steps, r.rank, &StepFigures::compute_us) / 1e3, comm / 1e3,
                      s.split ? fmt::format("{:.3f}", median_of(s.steps, r.rank, &StepFigures::waiting_us) / 1e3)
                              : "-",
                      median_of(s.steps, r.rank, &StepFigures::exposed_us) / 1e3,
                      shares.empty() ? "-" : fmt::format("{:.1f}", stats::median(shares)),
                      colls.empty() ? 0 : static_cast<int>(stats::median(colls)),
                      bytes.empty() ? 0.0 : stats::median(bytes) / 1e6);
  }
  if (job.ranks.size() > 1) {
    os << "\nIterations over ranks (step time):\n";
    os << fmt::format("{:>6} {:>6} {:>10} {:>10} {:>9} {:>8}\n", "step", "ranks", "min ms", "max ms", "spread %",
                      "slowest");
    for (const auto& sp : s.spread)
      os << fmt::format("{:>6} {:>6} {:>10.3f} {:>10.3f} {:>9.1f} {:>8}\n", sp.step, sp.ranks, sp.min_us / 1e3,
                        sp.max_us / 1e3, sp.min_us > 0 ? 100 * (sp.max_us - sp.min_us) / sp.min_us : 0.0,
                        sp.slowest_rank);
  }
  os << "\nCollectives (every rank, every traced iteration; time: the execution's, waiting for later ranks "
        "included; moving: from the last rank's start):\n";
  os << fmt::format("{:>6} {:<15} {:<9} {:>10} {:>6} {:>10} {:>11} {:>11} {:>11} {:>11}\n", "group", "collective",
                    "dtype", "size", "count", "p50 us", "wait p50 us", "algbw GB/s", "busbw GB/s", "moving busbw");
  auto gbs = [](double v) { return v > 0 ? fmt::format("{:.3f}", v) : std::string("-"); };
  for (const auto& k : s.classes) {
    const bool timed = k.timed > 0;
    os << fmt::format("{:>6} {:<15} {:<9} {:>10} {:>6} {:>10} {:>11} {:>11} {:>11} {:>11}\n",
                      k.group.empty() ? "?" : k.group, k.name, k.dtype.empty() ? "?" : k.dtype, size_text(k.bytes),
                      k.count, timed ? fmt::format("{:.1f}", k.time_p50_us) : "-",
                      s.split && timed ? fmt::format("{:.1f}", k.wait_p50_us) : "-", gbs(k.algbw_gbs),
                      gbs(k.busbw_gbs), s.split ? gbs(k.busbw_moving_gbs) : "-");
  }
}

report::Json job_json(const JobTrace& job, const JobSummary& s) {
  using report::Json;
  Json doc;
  doc["schema"] = "dtbench.job_trace";
  doc["schema_version"] = 1;
  doc["created"] = report::utc_timestamp();
  doc["source"] = job.source;
  doc["world_size"] = job.world_size;
  doc["skipped"] = job.skipped;
  doc["split"] = s.split;
  doc["split_note"] = s.split_note;
  doc["agreement_checked"] = s.unchecked_note.empty();
  doc["agreement_note"] = s.unchecked_note;
  Json ranks = Json::array();
  for (const auto& r : job.ranks) {
    Json jr;
    jr["rank"] = r.rank;
    jr["file"] = r.file;
    jr["backend"] = r.backend;
    jr["device"] = r.device;
    jr["pairing_note"] = r.pairing_note;
    Json groups = Json::array();
    for (const auto& g : r.groups)
      groups.push_back({{"name", g.name}, {"desc", g.desc}, {"backend", g.backend}, {"ranks", g.ranks}});
    jr["groups"] = groups;
    Json steps = Json::array();
    for (const auto& f : s.steps)
      if (f.rank == r.rank)
        steps.push_back({{"step", f.step}, {"time_us", f.time_us}, {"compute_us", f.compute_us},
                         {"comm_us", f.comm_us}, {"overlapped_us", f.overlapped_us}, {"exposed_us", f.exposed_us},
                         {"waiting_us", f.waiting_us}, {"moving_us", f.moving_us},
                         {"collectives", f.collectives}, {"bytes", f.bytes}});
    jr["steps"] = steps;
    Json colls = Json::array();
    for (const auto& c : r.collectives) {
      Json jc = {{"name", c.name},         {"group", c.group},           {"group_size", c.group_size},
                 {"dtype", c.dtype},       {"in_nelems", c.in_nelems},   {"out_nelems", c.out_nelems},
                 {"bytes", c.bytes},       {"step", c.step},             {"issue_us", c.issue.begin},
                 {"issue_dur_us", c.issue.end - c.issue.begin}};
      if (c.has_run()) {
        jc["run_us"] = c.run.begin;
        jc["run_dur_us"] = c.run.end - c.run.begin;
      } else {
        jc["run_us"] = nullptr;
        jc["run_dur_us"] = nullptr;
      }
      colls.push_back(jc);
    }
    jr["collectives"] = colls;
    ranks.push_back(jr);
  }
  doc["ranks"] = ranks;
  Json classes = Json::array();
  for (const auto& k : s.classes)
    classes.push_back({{"name", k.name}, {"group", k.group}, {"group_size", k.group_size}, {"dtype", k.dtype},
                       {"bytes", k.bytes}, {"count", k.count}, {"timed", k.timed}, {"time_p50_us", k.time_p50_us},
                       {"time_min_us", k.time_min_us}, {"time_max_us", k.time_max_us}, {"algbw_gbs", k.algbw_gbs},
                       {"busbw_gbs", k.busbw_gbs}, {"wait_p50_us", k.wait_p50_us}, {"move_p50_us", k.move_p50_us},
                       {"busbw_moving_gbs", k.busbw_moving_gbs}});
  doc["classes"] = classes;
  Json spread = Json::array();
  for (const auto& sp : s.spread)
    spread.push_back({{"step", sp.step}, {"ranks", sp.ranks}, {"min_us", sp.min_us}, {"max_us", sp.max_us},
                      {"slowest_rank", sp.slowest_rank}});
  doc["iterations"] = spread;
  return doc;
}

}  // namespace dtbench::job
