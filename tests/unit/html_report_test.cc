// The report writers on literal inputs: SVG charts (ticks, escaping, marks,
// empty charts), the HTML page and the tidy CSV.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "report/csv_report.h"
#include "report/figures.h"
#include "report/html_report.h"
#include "report/json_io.h"
#include "report/svg_chart.h"

namespace dtbench {
namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(Svg, NiceTicksCoverTheRange) {
  EXPECT_EQ(report::nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(report::nice_ticks(0, 103, 5), (std::vector<double>{0, 50, 100, 150}));
  EXPECT_EQ(report::nice_ticks(0, 0.7, 4), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8}));
}

TEST(Svg, EscapesText) {
  EXPECT_EQ(report::html_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(Svg, LineChartHasOnePolylinePerSeriesAndALegend) {
  report::LineChart c{"t<1>", "ranks", "examples/s", false, false, {}};
  c.series.push_back({"ddp", {1, 2, 4}, {10, 18, 30}, {1, 1, 1}});
  c.series.push_back({"sync & co", {1, 2}, {9, 15}, {}});
  const auto svg = report::render_svg(c);
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(count(svg, "<circle"), 5u);
  EXPECT_EQ(count(svg, "class=\"err\""), 3u);
  EXPECT_NE(svg.find("sync &amp; co"), std::string::npos);
  EXPECT_NE(svg.find("t&lt;1&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">examples/s<"), std::string::npos);
  EXPECT_NE(svg.find("<g class=\"plot\">"), std::string::npos);
}

TEST(Svg, LogAxisWithByteLabels) {
  report::LineChart c{"busbw", "message size", "GB/s", true, true, {}};
  c.series.push_back({"gloo", {1024, 4096, 1 << 20}, {0.1, 0.2, 1.0}, {}});
  const auto svg = report::render_svg(c);
  EXPECT_NE(svg.find(">1 KiB<"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">1 MiB<"), std::string::npos);
}

TEST(Svg, BarChartsStackedAndGrouped) {
  report::BarChart g{"p", "ms", {"a", "b"}, {{"p50", {1, 2}}, {"p99", {3, 4}}}, false};
  EXPECT_EQ(count(report::render_svg(g), "<rect x="), 4u + 2u);  // bars + legend swatches
  report::BarChart s = g;
  s.stacked = true;
  const auto svg = report::render_svg(s);
  // Category b stacks 2 + 4: the axis reaches 6 (grouped, it stops at 4).
  EXPECT_NE(svg.find(">6</text>"), std::string::npos) << svg;
  EXPECT_EQ(report::render_svg(g).find(">6</text>"), std::string::npos);
  report::BarChart empty{"none", "ms", {}, {}, false};
  EXPECT_NE(report::render_svg(empty).find("no data"), std::string::npos);
}

report::ReportSource literal_sources() {
  report::ReportSource s;
  s.path = "a.json";
  s.kind = "compare";
  s.env = {{"host", {{"hostname", "node<1>"}}}};
  s.config = {{"iters", 2}};
  for (int world : {1, 2})
    for (double bucket : {1.0, 25.0}) {
      report::ComparePoint p;
      p.key = {"mlp", world, "ddp", bucket, "none"};
      p.run.world_size = world;
      p.run.batch_per_rank = 8;
      p.run.reducer = "ddp";
      for (int r = 0; r < world; ++r) {
        report::RankSamples rs;
        rs.rank = r;
        rs.total = {0.1 * world, 0.1 * world};
        rs.forward = rs.backward = rs.comm_wait = rs.optimizer = {0.01, 0.01};
        p.run.ranks.push_back(rs);
      }
      p.extras = report::Json::object();
      s.points.push_back(p);
    }
  return s;
}

TEST(Html, PageHasEveryChartAndTheEnvironment) {
  auto s = literal_sources();
  report::ReportSource comm;
  comm.path = "c.json";
  comm.kind = "comm";
  comm.comm.push_back({"allreduce", "gloo", "out_of_place", 2, 1024, 10, 0.1, 0.1});
  comm.comm.push_back({"allreduce", "gloo", "out_of_place", 2, 4096, 20, 0.2, 0.2});
  std::ostringstream out;
  report::write_html(out, {s, comm}, "My <run>");
  const auto html = out.str();
  for (const char* id : {"throughput-mlp", "efficiency-mlp", "percentiles-mlp", "phases-mlp",
                         "buckets-mlp", "busbw-allreduce", "latency-allreduce"})
    EXPECT_NE(html.find(std::string("<figure id=\"") + id + "\""), std::string::npos) << id;
  // No per-rank arrival in these rows: no heat map.
  EXPECT_EQ(html.find("<figure id=\"arrival-allreduce\""), std::string::npos);
  EXPECT_EQ(count(html, "<svg class=\"chart\""), 7u);
  EXPECT_NE(html.find("My &lt;run&gt;"), std::string::npos);
  EXPECT_NE(html.find("node&lt;1&gt;"), std::string::npos) << "env table, escaped";
  // The only URL is the SVG namespace (a name, never fetched).
  std::string rest = html;
  for (std::size_t at; (at = rest.find("http://www.w3.org/2000/svg")) != std::string::npos;)
    rest.erase(at, std::strlen("http://www.w3.org/2000/svg"));
  EXPECT_EQ(rest.find("http://"), std::string::npos) << "an external URL";
  EXPECT_EQ(rest.find("https://"), std::string::npos) << "an external URL";
  EXPECT_EQ(html.find("<script src"), std::string::npos) << "no external resources";
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST(Html, RankArrivalHeatMapAndLatencyDistribution) {
  report::ReportSource comm;
  comm.path = "c.json";
  comm.kind = "comm";
  for (std::uint64_t b : {1024u, 4096u, 16384u}) {
    report::CommRow r{"allreduce", "gloo", "in_place", 3, b, 10, 0.1, 0.1};
    r.lateness_us = {0, 0, 3000.0 + b};  // rank 2 late
    r.percentiles_us = {{"p50", 9}, {"p99", 30}};
    comm.comm.push_back(r);
  }
  std::ostringstream out;
  report::write_html(out, {comm}, "t");
  const auto html = out.str();
  const auto at = html.find("<figure id=\"arrival-allreduce\"");
  ASSERT_NE(at, std::string::npos);
  const auto end = html.find("</figure>", at);
  const auto fig = html.substr(at, end - at);
  // 3 ranks x 3 sizes, each cell's value on hover; rank 2's darkest at 16 KiB.
  EXPECT_EQ(count(fig, "<title>rank "), 9u);
  EXPECT_NE(fig.find("<title>rank 2, 16 KiB: 19384 us after the median rank</title>"), std::string::npos) << fig;
  EXPECT_NE(fig.find("fill=\"#b2182b\"><title>rank 2, 16 KiB"), std::string::npos) << "the largest is the darkest";
  EXPECT_NE(fig.find("fill=\"#ffffff\"><title>rank 0, 1 KiB"), std::string::npos) << "the smallest is white";
  const auto lat = html.find("<figure id=\"latency-allreduce\"");
  ASSERT_NE(lat, std::string::npos);
  const auto lfig = html.substr(lat, html.find("</figure>", lat) - lat);
  for (const char* name : {">mean<", ">p50<", ">p99<"}) EXPECT_NE(lfig.find(name), std::string::npos) << name;
}

// Time against memory (issue 33): a chart per model where runs recorded
// their peak, one line per strategy through its world sizes, and the memory
// figures in the CSV.
TEST(Html, TimeAgainstMemoryChartPerStrategy) {
  report::ReportSource s;
  s.path = "m.json";
  s.kind = "compare";
  for (const char* reducer : {"ddp", "fsdp"})
    for (int world : {2, 1}) {  // out of order: the line follows the ranks
      report::ComparePoint p;
      p.key = {"gpt2", world, reducer, 25.0, "none"};
      p.run.world_size = world;
      p.run.batch_per_rank = 4;
      p.run.reducer = reducer;
      p.run.peak_bytes = (std::string(reducer) == "ddp" ? 400 : 300 / world) * (1 << 20);
      p.run.peak_rss_bytes = 2 * p.run.peak_bytes;
      p.run.model_state_bytes = p.run.peak_bytes / 2;
      report::RankSamples rs;
      rs.total = {0.2, 0.2};
      rs.forward = rs.backward = rs.comm_wait = rs.optimizer = {0.05, 0.05};
      p.run.ranks.push_back(rs);
      p.extras = report::Json::object();
      s.points.push_back(p);
    }
  const auto figs = report::build_figures({s});
  const report::Figure* mem = nullptr;
  for (const auto& f : figs)
    if (f.id == "memory-gpt2") mem = &f;
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(count(mem->svg, "<polyline"), 2u);
  EXPECT_EQ(count(mem->svg, "<circle"), 4u);
  EXPECT_NE(mem->svg.find("peak tensor memory per rank (MiB)"), std::string::npos);
  EXPECT_NE(mem->svg.find(">fsdp<"), std::string::npos);
  // Without recorded peaks (older reports) the chart is left out, saying why.
  for (auto& p : s.points) p.run.peak_bytes = -1;
  bool left_out = false;
  for (const auto& f : report::build_figures({s}))
    if (f.id == "memory-gpt2") {
      left_out = true;
      EXPECT_TRUE(f.svg.empty());
      EXPECT_NE(f.omitted.find("peak tensor memory"), std::string::npos) << f.omitted;
    }
  EXPECT_TRUE(left_out) << "the memory chart is neither drawn nor left out with a reason";

  std::ostringstream csv;
  for (auto& p : s.points) p.run.peak_bytes = 150 << 20;
  report::write_csv(csv, {s});
  EXPECT_NE(csv.str().find("m.json,compare,gpt2,fsdp,fsdp,none,25,2,,,,,peak_bytes,max_rank,157286400"),
            std::string::npos)
      << csv.str();
  EXPECT_NE(csv.str().find(",peak_rss_bytes,max_rank,"), std::string::npos);
  EXPECT_NE(csv.str().find(",model_state_bytes,value,"), std::string::npos);
}

// Ticks: the data's own x values where their labels have room, evenly
// spaced ones where they would be drawn over each other (two runs whose peak
// memory differs by 0.05 MiB once printed "473.449" over "473.5").
TEST(Svg, CloseXValuesGetEvenlySpacedTicks) {
  report::LineChart c{"m", "MiB", "ms", false, false, {}};
  c.series.push_back({"ddp", {473.449, 473.5, 480}, {10, 11, 12}, {}});
  const auto svg = report::render_svg(c);
  EXPECT_EQ(svg.find(">473.449<"), std::string::npos) << svg;
  EXPECT_GE(count(svg, "class=\"tick xtick\""), 3u);
  report::LineChart ranks{"r", "ranks", "ex/s", false, false, {}};
  ranks.series.push_back({"ddp", {1, 2, 4, 8}, {1, 2, 4, 8}, {}});
  const auto r = report::render_svg(ranks);
  for (const char* t : {">1<", ">2<", ">4<", ">8<"}) EXPECT_NE(r.find(t), std::string::npos) << t;
}

// The page opens with what the runs found; a chart with nothing to draw (a
// sweep without its 1-rank row has no efficiency) is left out with a line.
TEST(Html, FindingsFirstAndEmptyChartsLeftOutWithAReason) {
  auto s = literal_sources();
  // Make 25 MB buckets faster at 2 ranks; peaks recorded.
  for (auto& p : s.points) {
    p.run.peak_bytes = (p.key.bucket_cap_mb == 1.0 ? 40 : 30) << 20;
    if (p.key.world_size == 2 && p.key.bucket_cap_mb == 25.0)
      for (auto& r : p.run.ranks) r.total = {0.1, 0.1};
  }
  const auto f = report::find_findings({s});
  ASSERT_FALSE(f.sentences.empty());
  EXPECT_NE(f.sentences[0].find("mlp at 2 ranks: ddp (25 MB buckets) is the fastest of 2 runs"), std::string::npos)
      << f.sentences[0];
  EXPECT_NE(f.sentences[0].find("scaling efficiency is 100 %"), std::string::npos) << f.sentences[0];
  EXPECT_NE(f.sentences[1].find("from 30 MiB (ddp (25 MB buckets)) to 40 MiB (ddp (1 MB buckets))"), std::string::npos)
      << f.sentences[1];
  std::ostringstream html;
  report::write_html(html, {s}, "t");
  const auto page = html.str();
  EXPECT_LT(page.find("What the runs found"), page.find("<svg")) << "findings before the charts";
  EXPECT_EQ(page.find("Left out"), std::string::npos);

  // Without the 1-rank runs: efficiency unknown, its chart left out.
  report::ReportSource wide = s;
  wide.points.erase(std::remove_if(wide.points.begin(), wide.points.end(),
                                   [](const report::ComparePoint& p) { return p.key.world_size == 1; }),
                    wide.points.end());
  EXPECT_NE(report::find_findings({wide}).sentences[0].find("scaling efficiency is unknown: no 1-rank run"),
            std::string::npos);
  std::ostringstream h2;
  report::write_html(h2, {wide}, "t");
  EXPECT_NE(h2.str().find("Left out: mlp: scaling efficiency vs ranks — no strategy has a 1-rank run"), std::string::npos);
  EXPECT_EQ(h2.str().find("<figure id=\"efficiency-mlp\""), std::string::npos);
}

// Bar charts with many categories grow wider rather than draw their labels
// over each other: at least 16 units a category.
TEST(Svg, ManyCategoriesWidenTheChart) {
  report::BarChart g{"p", "ms", {}, {{"p50", {}}}, false};
  for (int i = 0; i < 40; ++i) {
    g.categories.push_back("ddp 25MB " + std::to_string(i) + "R");
    g.series[0].values.push_back(i);
  }
  const auto svg = report::render_svg(g);
  const auto at = svg.find("viewBox=\"0 0 ");
  ASSERT_NE(at, std::string::npos);
  const double width = std::stod(svg.substr(at + 12));
  EXPECT_GE(width, 78 + 40 * 16 + 250 - 0.5) << svg.substr(at, 40);
  EXPECT_NE(svg.find("rotate(-"), std::string::npos);
}

// Runs from two files are named by file: `report before.json after.json`.
TEST(Findings, RunsOfTwoFilesAreNamedByFile) {
  auto a = literal_sources();
  auto b = a;
  b.path = "b.json";
  for (auto& p : b.points) for (auto& r : p.run.ranks) r.total = {0.05 * p.key.world_size, 0.05 * p.key.world_size};
  for (auto* s : {&a, &b})
    s->points.erase(std::remove_if(s->points.begin(), s->points.end(),
                                   [](const report::ComparePoint& p) { return p.key.bucket_cap_mb != 25.0; }),
                    s->points.end());
  const auto f = report::find_findings({a, b});
  ASSERT_FALSE(f.sentences.empty());
  EXPECT_NE(f.sentences[0].find("ddp [b.json] is the fastest of 2 runs"), std::string::npos) << f.sentences[0];
  EXPECT_NE(f.sentences[0].find("ahead of ddp [a.json]"), std::string::npos) << f.sentences[0];
}

TEST(Findings, CommPeakPlateauAndCeiling) {
  report::ReportSource c;
  c.path = "c.json";
  c.kind = "comm";
  c.comm.push_back({"allreduce", "nccl", "out_of_place", 8, 1 << 20, 10, 0, 100});
  c.comm.push_back({"allreduce", "nccl", "out_of_place", 8, 1 << 24, 10, 0, 180});
  c.comm.push_back({"allreduce", "nccl", "out_of_place", 8, 1 << 28, 10, 0, 185});
  report::FindingsOptions o;
  o.busbw_ceiling_gbs = 200;
  auto f = report::find_findings({c}, o);
  ASSERT_EQ(f.sentences.size(), 1u);
  EXPECT_EQ(f.sentences[0], "allreduce over nccl on 8 ranks: bus bandwidth peaks at 185 GB/s (256 MiB messages), "
                            "where the largest sizes level off; 92 % of the 200 GB/s ceiling.");
  c.comm.pop_back();  // the largest size is now the peak, 80 % above the one before
  f = report::find_findings({c});
  EXPECT_NE(f.sentences[0].find("still rising at the largest size"), std::string::npos) << f.sentences[0];
}

TEST(Csv, TidyRowsWithHeader) {
  std::ostringstream out;
  report::write_csv(out, {literal_sources()});
  std::istringstream in(out.str());
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header,
            "source,kind,model,strategy,reducer,compression,bucket_cap_mb,world_size,collective,"
            "backend,placement,bytes,metric,stat,value");
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  // Per point: 5 phases x 5 stats + per-rank mean and band + total + efficiency.
  EXPECT_EQ(lines.size(), 4u * (25 + 4));
  EXPECT_EQ(lines[0], "a.json,compare,mlp,ddp,ddp,none,1,1,,,,,forward_s,mean,0.01");
  EXPECT_NE(out.str().find("a.json,compare,mlp,ddp,ddp,none,25,2,,,,,scaling_efficiency,value,0.5"),
            std::string::npos);
  EXPECT_EQ(report::csv_field("a,b\"c"), "\"a,b\"\"c\"");
  EXPECT_EQ(report::csv_field("plain"), "plain");
}

TEST(Html, GpuRunsChartTheirCudaEventPhases) {
  // Host phases 10 ms each; CUDA-event phases 40 ms forward: on a GPU the
  // chart and the CSV must show the GPU's time, not the launches'.
  auto s = literal_sources();
  for (auto& p : s.points)
    for (auto& r : p.run.ranks) {
      r.device.forward = {0.04, 0.04};
      r.device.backward = r.device.comm_wait = r.device.optimizer = {0.01, 0.01};
      r.device.total = {0.07, 0.07};
    }
  std::ostringstream html;
  report::write_html(html, {s}, "gpu");
  EXPECT_NE(html.str().find("GPU time by CUDA events"), std::string::npos);
  std::ostringstream csv;
  report::write_csv(csv, {s});
  EXPECT_NE(csv.str().find("a.json,compare,mlp,ddp,ddp,none,1,1,,,,,forward_device_s,mean,0.04"), std::string::npos)
      << csv.str();
  // A CPU run (no CUDA events) keeps the host phases and no device rows.
  std::ostringstream cpu, cpu_html;
  report::write_csv(cpu, {literal_sources()});
  EXPECT_EQ(cpu.str().find("_device_s"), std::string::npos);
  report::write_html(cpu_html, {literal_sources()}, "cpu");
  EXPECT_EQ(cpu_html.str().find("CUDA events"), std::string::npos);
}

TEST(ReportData, RejectsForeignFiles) {
  const std::string path = ::testing::TempDir() + "/dtbench_foreign.json";
  report::write_json_atomic(path, {{"schema", "other"}, {"schema_version", 1}});
  EXPECT_THROW(report::load_report_source(path), UsageError);
  report::write_json_atomic(path, {{"schema", "dtbench.ddp"}, {"schema_version", 9}});
  EXPECT_THROW(report::load_report_source(path), UsageError);
  std::remove(path.c_str());
  EXPECT_THROW(report::load_report_source(path), UsageError);
}

}  // namespace
}  // namespace dtbench
