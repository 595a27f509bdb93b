#include "report/findings.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/units.h"
#include "report/compare_record.h"
#include "report/figures.h"

namespace dtbench::report {
namespace {

// One training run of a source, with its throughput row.
struct Run {
  const ReportSource* source;
  const ComparePoint* point;
  ThroughputRow row;
};

std::string ranks_text(int n) { return fmt::format("{} rank{}", n, n == 1 ? "" : "s"); }

void training_findings(Findings& out, const std::vector<ReportSource>& sources) {
  std::vector<std::string> models;
  std::map<std::string, std::vector<Run>> runs;
  for (const auto& s : sources) {
    const auto rows = throughput_rows(s.points);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& p = s.points[i];
      if (p.key.reducer == "none") continue;  // the "no ddp" baseline is no strategy
      if (!(rows[i].total > 0)) continue;      // no timed iteration: nothing to rank
      if (!runs.count(p.key.model)) models.push_back(p.key.model);
      runs[p.key.model].push_back({&s, &p, rows[i]});
    }
  }
  for (const auto& model : models) {
    const auto& all = runs[model];
    int widest = 0;
    for (const auto& r : all) widest = std::max(widest, r.point->key.world_size);
    std::vector<const Run*> at;
    std::set<double> buckets;
    std::set<const ReportSource*> files;
    for (const auto& r : all)
      if (r.point->key.world_size == widest) {
        at.push_back(&r);
        buckets.insert(r.point->key.bucket_cap_mb);
        files.insert(r.source);
      }
    // A run's name: its strategy, with the bucket size and the file where
    // those vary (`dtbench report before.json after.json`).
    auto name = [&](const Run* r) {
      std::string n = r->point->key.strategy();
      if (buckets.size() > 1) n += fmt::format(" ({:g} MB buckets)", r->point->key.bucket_cap_mb);
      if (files.size() > 1) n += " [" + file_basename(r->source->path) + "]";
      return n;
    };
    std::stable_sort(at.begin(), at.end(), [](const Run* a, const Run* b) { return a->row.total > b->row.total; });
    const Run* best = at.front();
    std::string s = fmt::format("{} at {}: ", model, ranks_text(widest));
    if (at.size() == 1) {
      s += fmt::format("{} ran, {:.4g} examples/s in all", name(best), best->row.total);
    } else {
      const Run* next = at[1];
      s += fmt::format("{} is the fastest of {} runs, {:.4g} examples/s in all, {:.0f} % ahead of {} ({:.4g})", name(best),
                       at.size(), best->row.total, 100 * (best->row.total / next->row.total - 1), name(next),
                       next->row.total);
    }
    if (widest > 1) {
      if (best->row.efficiency)
        s += fmt::format("; its scaling efficiency is {:.0f} % (throughput ÷ {} × its 1-rank throughput)",
                         100 * *best->row.efficiency, widest);
      else
        s += fmt::format("; its scaling efficiency is unknown: no 1-rank run of {} to divide by", name(best));
    }
    out.sentences.push_back(s + ".");
    out.figures.push_back({fmt::format("{}: fastest at {}", model, ranks_text(widest)), name(best),
                           fmt::format("{:.4g} examples/s", best->row.total)});
    if (widest > 1 && best->row.efficiency)
      out.figures.push_back({fmt::format("{}: scaling efficiency at {}", model, ranks_text(widest)),
                             fmt::format("{:.0f} %", 100 * *best->row.efficiency), name(best)});

    // Memory per rank at the widest size, where the runs recorded it.
    const Run* least = nullptr;
    const Run* most = nullptr;
    for (const auto* r : at) {
      if (r->point->run.peak_bytes < 0) continue;
      if (!least || r->point->run.peak_bytes < least->point->run.peak_bytes) least = r;
      if (!most || r->point->run.peak_bytes > most->point->run.peak_bytes) most = r;
    }
    if (least) {
      const auto bytes = [](const Run* r) { return format_bytes(static_cast<std::uint64_t>(r->point->run.peak_bytes)); };
      out.sentences.push_back(
          least == most || least->point->run.peak_bytes == most->point->run.peak_bytes
              ? fmt::format("{} at {}: peak tensor memory per rank {} ({}).", model, ranks_text(widest), bytes(least),
                            name(least))
              : fmt::format("{} at {}: peak tensor memory per rank from {} ({}) to {} ({}).", model, ranks_text(widest),
                            bytes(least), name(least), bytes(most), name(most)));
      out.figures.push_back({fmt::format("{}: least memory per rank at {}", model, ranks_text(widest)), bytes(least),
                             name(least)});
    }
  }
}

void comm_findings(Findings& out, const std::vector<ReportSource>& sources, const FindingsOptions& o) {
  for (const auto& s : sources) {
    std::vector<std::string> collectives;
    for (const auto& r : s.comm)
      if (std::find(collectives.begin(), collectives.end(), r.collective) == collectives.end())
        collectives.push_back(r.collective);
    for (const auto& coll : collectives) {
      // Out-of-place rows, as nccl-tests' first columns; in-place where the
      // backend has no out-of-place form (c10d's allreduce).
      std::vector<const CommRow*> rows;
      for (const char* placement : {"out_of_place", "in_place"}) {
        for (const auto& r : s.comm)
          if (r.collective == coll && r.placement == placement) rows.push_back(&r);
        if (!rows.empty()) break;
      }
      if (rows.empty()) continue;
      std::stable_sort(rows.begin(), rows.end(), [](const CommRow* a, const CommRow* b) { return a->bytes < b->bytes; });
      const CommRow* peak = *std::max_element(rows.begin(), rows.end(), [](const CommRow* a, const CommRow* b) {
        return a->busbw_gbs < b->busbw_gbs;
      });
      const CommRow* last = rows.back();
      const std::string where = fmt::format("{} over {} on {}", coll, peak->backend, ranks_text(peak->world_size));
      std::string s_text = fmt::format("{}: bus bandwidth peaks at {:.3g} GB/s ({} messages)", where, peak->busbw_gbs,
                                       format_bytes(peak->bytes));
      if (rows.size() >= 2) {
        const CommRow* before = rows[rows.size() - 2];
        if (last == peak && last->busbw_gbs > 1.1 * before->busbw_gbs)
          s_text += fmt::format(", still rising at the largest size: sweep further (-e) to find its plateau");
        else if (last->busbw_gbs < 0.9 * peak->busbw_gbs)
          s_text += fmt::format(" and falls to {:.3g} GB/s at {}", last->busbw_gbs, format_bytes(last->bytes));
        else
          s_text += ", where the largest sizes level off";
      }
      std::string note = format_bytes(peak->bytes);
      if (o.busbw_ceiling_gbs > 0) {
        s_text += fmt::format("; {:.0f} % of the {:.3g} GB/s ceiling", 100 * peak->busbw_gbs / o.busbw_ceiling_gbs,
                              o.busbw_ceiling_gbs);
        note += fmt::format(", {:.0f} % of {:.3g} GB/s", 100 * peak->busbw_gbs / o.busbw_ceiling_gbs, o.busbw_ceiling_gbs);
      }
      out.sentences.push_back(s_text + ".");
      out.figures.push_back({fmt::format("{} busbw peak ({} {}R)", coll, peak->backend, peak->world_size),
                             fmt::format("{:.3g} GB/s", peak->busbw_gbs), note});
    }
  }
}

void projection_findings(Findings& out, const std::vector<ReportSource>& sources) {
  for (const auto& s : sources) {
    if (s.projection.empty()) continue;
    if (s.projection_search) {  // rows are the layouts that fit, best first
      const auto& best = s.projection.front();
      out.sentences.push_back(fmt::format(
          "{} on {} ({}): the fastest layout that fits {} per rank is {}, {:.4g} tokens/s per rank at {} per rank.",
          s.projection_model, ranks_text(best.world_size), file_basename(s.path),
          format_bytes(static_cast<std::uint64_t>(s.projection_memory_limit)), best.layout, best.tokens_per_s_per_rank,
          format_bytes(static_cast<std::uint64_t>(best.memory_bytes))));
      out.figures.push_back({fmt::format("{}: best layout at {}", s.projection_model, ranks_text(best.world_size)),
                             fmt::format("{:.4g} tokens/s", best.tokens_per_s_per_rank), best.layout_label});
      continue;
    }
    int widest = 0;
    for (const auto& p : s.projection) widest = std::max(widest, p.world_size);
    const ProjectionPoint* best = nullptr;
    for (const auto& p : s.projection) {
      if (p.world_size != widest) continue;
      const bool fits = s.projection_memory_limit <= 0 || p.memory_bytes < 0 || p.memory_bytes <= s.projection_memory_limit;
      if (fits && (!best || p.iteration_s < best->iteration_s)) best = &p;
    }
    if (!best) {
      out.sentences.push_back(fmt::format("{} projected to {}: no strategy fits the {} per rank given.",
                                          s.projection_model, ranks_text(widest),
                                          format_bytes(static_cast<std::uint64_t>(s.projection_memory_limit))));
      continue;
    }
    out.sentences.push_back(fmt::format("{} projected to {} ({}): {} is the fastest{}, {:.4g} ms per iteration at {:.0f} % "
                                        "scaling efficiency.",
                                        s.projection_model, ranks_text(widest), file_basename(s.path), best->strategy,
                                        s.projection_memory_limit > 0 ? " that fits the memory given" : "",
                                        best->iteration_s * 1e3, 100 * best->efficiency));
    out.figures.push_back({fmt::format("{}: projected at {}", s.projection_model, ranks_text(widest)),
                           fmt::format("{:.0f} %", 100 * best->efficiency),
                           fmt::format("{} efficiency", best->strategy)});
  }
}

}  // namespace

Findings find_findings(const std::vector<ReportSource>& sources, const FindingsOptions& options) {
  Findings f;
  training_findings(f, sources);
  comm_findings(f, sources, options);
  projection_findings(f, sources);
  return f;
}

}  // namespace dtbench::report
