#include "report/comm_reporter.h"

#include <sstream>

#include <gtest/gtest.h>

namespace dtbench::report {

CommTiming timing(double time_us, double gbs, std::int64_t wrong, std::vector<double> rank_us) {
  CommTiming t;
  t.ran = true;
  t.time_us = time_us;
  t.algbw_gbs = t.busbw_gbs = gbs;
  t.wrong = wrong;
  t.rank_us = std::move(rank_us);
  t.percentile_us = {time_us - 0.5, time_us + 5};
  t.lateness_us = {0, 0};
  t.late_rank = 0;
  t.samples_us = {{time_us - 1, time_us - 1}, {time_us + 1, time_us + 1}};
  return t;
}

CommRecord sample() {
  CommRecord r;
  r.collective = "allreduce";
  r.bytes = 1024;
  r.count = 256;
  r.dtype = "float32";
  r.op = "sum";
  r.percentiles = {50, 99.9};
  r.out_of_place = timing(10.0, 0.1024, 0, {9.0, 11.0});
  r.in_place = timing(20.0, 0.0512, 2, {19.0, 21.0});
  return r;
}

TEST(CommReporter, JsonRoundTrip) {
  auto r = sample();
  r.in_place.spikes = 1;
  r.in_place.spike_list = {{1, 1, 21.0}};
  r.in_place.straggler = true;
  r.in_place.late_rank = 1;
  r.in_place.late_us = 7.5;
  r.cycle = 2;
  const auto j = to_json(r);
  EXPECT_DOUBLE_EQ(j["in_place"]["percentiles_us"]["p99.9"].get<double>(), 25.0);
  // nccl-tests' -J names where it has the field.
  EXPECT_EQ(j["size"].get<std::uint64_t>(), 1024u);
  EXPECT_EQ(j["type"].get<std::string>(), "float32");
  EXPECT_EQ(j["redop"].get<std::string>(), "sum");
  EXPECT_DOUBLE_EQ(j["in_place"]["time"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(j["in_place"]["alg_bw"].get<double>(), 0.0512);
  EXPECT_DOUBLE_EQ(j["in_place"]["bus_bw"].get<double>(), 0.0512);
  EXPECT_EQ(j["in_place"]["nwrong"].get<std::int64_t>(), 2);
  EXPECT_FALSE(j.contains("bytes") || j["in_place"].contains("time_us") || j["in_place"].contains("wrong"));
  const auto back = comm_record_from_json(j);
  EXPECT_EQ(back.collective, "allreduce");
  EXPECT_EQ(back.bytes, 1024u);
  EXPECT_EQ(back.cycle, 2);
  EXPECT_DOUBLE_EQ(back.in_place.time_us, 20.0);
  EXPECT_EQ(back.in_place.rank_us, (std::vector<double>{19.0, 21.0}));
  EXPECT_EQ(back.in_place.percentile_us, (std::vector<double>{19.5, 25.0}));
  EXPECT_EQ(back.in_place.samples_us, r.in_place.samples_us);
  EXPECT_TRUE(back.in_place.straggler);
  EXPECT_EQ(back.in_place.late_rank, 1);
  ASSERT_EQ(back.in_place.spike_list.size(), 1u);
  EXPECT_EQ(back.in_place.spike_list[0].iter, 1);
  CommRecord no_inplace = r;
  no_inplace.in_place = CommTiming{};
  EXPECT_FALSE(comm_record_from_json(to_json(no_inplace)).in_place.ran);
}

TEST(CommReporter, ReadsReportsWithoutSamples) {
  // A schema-1 report: min/max rank, no percentiles, lateness or samples.
  const auto j = nlohmann::ordered_json::parse(R"({"collective": "allreduce", "bytes": 64, "count": 16,
    "dtype": "float32", "op": "sum", "root": -1,
    "out_of_place": {"time_us": 5, "algbw_gbs": 1, "busbw_gbs": 1, "wrong": 0, "min_rank_us": 4,
                     "max_rank_us": 6, "rank_us": [4, 6]},
    "in_place": null})");
  const auto r = comm_record_from_json(j);
  EXPECT_TRUE(r.out_of_place.ran);
  EXPECT_EQ(r.bytes, 64u);
  EXPECT_EQ(r.dtype, "float32");
  EXPECT_DOUBLE_EQ(r.out_of_place.time_us, 5.0);
  EXPECT_TRUE(r.out_of_place.percentile_us.empty());
  EXPECT_EQ(r.out_of_place.late_rank, -1);
}

TEST(CommReporter, FooterAveragesAndCountsWrong) {
  const std::vector<CommRecord> rs{sample()};
  EXPECT_DOUBLE_EQ(average_busbw(rs), (0.1024 + 0.0512) / 2);
  EXPECT_EQ(total_wrong(rs), 2);
  std::ostringstream out;
  CommConsoleReporter rep(out, {50, 99.9});
  rep.header();
  rep.row(rs[0]);
  rep.footer(rs, {"reduce_scatter: not here"}, {"out-of-place allreduce n/a: in place only"});
  const auto text = out.str();
  EXPECT_NE(text.find("busbw"), std::string::npos);
  EXPECT_NE(text.find("p99.9"), std::string::npos);
  EXPECT_NE(text.find("allreduce"), std::string::npos);
  EXPECT_NE(text.find("# skipped reduce_scatter: not here"), std::string::npos);
  EXPECT_NE(text.find("# note: out-of-place allreduce n/a: in place only"), std::string::npos);
  EXPECT_NE(text.find("Late ranks           : none"), std::string::npos) << text;
  EXPECT_NE(text.find("Out of bounds values : 2 FAILED"), std::string::npos);
}

TEST(CommReporter, FooterNamesTheLateRankAndSpikes) {
  auto r = sample();
  r.in_place.straggler = true;
  r.in_place.late_rank = 1;
  r.in_place.late_us = 2000;
  r.in_place.spikes = 1;
  r.in_place.spike_list = {{0, 3, 90.0}};
  std::ostringstream out;
  CommConsoleReporter(out).footer({r}, {}, {}, {"node 0 (a, rank 0)", "node 1 (b, rank 1)"}, {0, 1});
  const auto text = out.str();
  EXPECT_NE(text.find("rank 1, node 1 (b, rank 1) started a median 2000.0 us after the median rank in 1 of 2 "
                      "timed rows (1 KiB)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Spikes               : 1 iteration(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 0 iteration 3: 90.0 us against a median 19.0 us"), std::string::npos) << text;
}

// -c 0: nothing was compared, so nothing is claimed — N/A in the table and
// the footer, null in the JSON (read back as not checked), an empty CSV cell,
// never counted; a mixed list counts only what was checked.
TEST(CommReporter, UncheckedRowsClaimNothing) {
  auto r = sample();
  r.out_of_place.wrong = r.in_place.wrong = kNotChecked;
  const std::vector<CommRecord> rs{r};
  EXPECT_EQ(total_wrong(rs), 0);
  EXPECT_FALSE(any_checked(rs));
  std::ostringstream out;
  CommConsoleReporter rep(out, {50, 99.9});
  rep.row(r);
  rep.footer(rs, {}, {});
  const auto text = out.str();
  EXPECT_NE(text.find(" N/A "), std::string::npos) << text;
  EXPECT_NE(text.find("Out of bounds values : N/A (not checked: -c 0)"), std::string::npos) << text;
  EXPECT_EQ(text.find("OK"), std::string::npos) << text;
  const auto j = to_json(r);
  EXPECT_TRUE(j["in_place"]["nwrong"].is_null());
  EXPECT_EQ(comm_record_from_json(j).in_place.wrong, kNotChecked);
  std::ostringstream csv;
  write_comm_csv(csv, rs, 2);
  EXPECT_NE(csv.str().find(",0.1024,0.1024,,min,"), std::string::npos) << csv.str();
  const std::vector<CommRecord> mixed{r, sample()};
  EXPECT_TRUE(any_checked(mixed));
  EXPECT_EQ(total_wrong(mixed), 2);
}

TEST(CommReporter, CsvHasNcclTestsColumnsAndTheTimesReduction) {
  auto pp = sample();
  pp.collective = "pingpong";
  pp.in_place = CommTiming{};
  std::ostringstream out;
  write_comm_csv(out, {sample(), pp}, 2);
  std::istringstream in(out.str());
  std::string header, a, b, c, extra;
  std::getline(in, header);
  std::getline(in, a);
  std::getline(in, b);
  std::getline(in, c);
  EXPECT_EQ(header,
            "cycle,group,collective,placement,size,count,type,redop,root,time,algbw,busbw,#wrong,time_stat,p50,"
            "p99.9,late_rank,late_us,spikes,ceiling_gbs,of_ceiling,link_gbs,of_link");
  EXPECT_EQ(a.rfind("0,-1,allreduce,out_of_place,1024,256,float32,sum,-1,10,0.1024,0.1024,0,min,9.5,15,", 0), 0u) << a;
  EXPECT_EQ(b.rfind("0,-1,allreduce,in_place,1024,256,float32,sum,-1,20,0.0512,0.0512,2,min,", 0), 0u) << b;
  // pingpong's time is rank 0's round trip whatever -a says; its in-place
  // placement did not run, so it has no line.
  EXPECT_NE(c.find("pingpong,out_of_place,") , std::string::npos) << c;
  EXPECT_NE(c.find(",rank0,"), std::string::npos) << c;
  EXPECT_FALSE(std::getline(in, extra));
}

}  // namespace dtbench::report
