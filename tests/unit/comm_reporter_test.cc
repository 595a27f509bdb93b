#include "report/comm_reporter.h"

#include <sstream>

#include <gtest/gtest.h>

namespace dtbench::report {

CommRecord sample() {
  CommRecord r;
  r.collective = "allreduce";
  r.bytes = 1024;
  r.count = 256;
  r.dtype = "float32";
  r.op = "sum";
  r.out_of_place = {true, 10.0, 0.1024, 0.1024, 0, 9.0, 11.0, {9.0, 11.0}, {}, -1};
  r.in_place = {true, 20.0, 0.0512, 0.0512, 2, 19.0, 21.0, {19.0, 21.0}, {}, -1};
  return r;
}

TEST(CommReporter, JsonRoundTrip) {
  const auto r = sample();
  const auto back = comm_record_from_json(to_json(r));
  EXPECT_EQ(back.collective, "allreduce");
  EXPECT_EQ(back.bytes, 1024u);
  EXPECT_DOUBLE_EQ(back.in_place.time_us, 20.0);
  EXPECT_EQ(back.in_place.rank_us, (std::vector<double>{19.0, 21.0}));
  CommRecord no_inplace = r;
  no_inplace.in_place = CommTiming{};
  EXPECT_FALSE(comm_record_from_json(to_json(no_inplace)).in_place.ran);
}

TEST(CommReporter, FooterAveragesAndCountsWrong) {
  const std::vector<CommRecord> rs{sample()};
  EXPECT_DOUBLE_EQ(average_busbw(rs), (0.1024 + 0.0512) / 2);
  EXPECT_EQ(total_wrong(rs), 2);
  std::ostringstream out;
  CommConsoleReporter rep(out);
  rep.header();
  rep.row(rs[0]);
  rep.footer(rs, {"reduce_scatter: not here"});
  const auto text = out.str();
  EXPECT_NE(text.find("busbw"), std::string::npos);
  EXPECT_NE(text.find("allreduce"), std::string::npos);
  EXPECT_NE(text.find("# skipped reduce_scatter: not here"), std::string::npos);
  EXPECT_NE(text.find("Out of bounds values : 2 FAILED"), std::string::npos);
}

}  // namespace dtbench::report
