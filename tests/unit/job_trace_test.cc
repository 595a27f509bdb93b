// Reading a job's PyTorch profiler traces (src/job): names, dtypes, bus
// factors, and the figures of hand-made traces worked out by hand.
#include <gtest/gtest.h>

#include "core/error.h"
#include "job/job_summary.h"
#include "job/kineto_reader.h"

namespace dtbench::job {
namespace {

using report::Json;

TEST(JobTrace, CollectiveNamesLoseTheirDecoration) {
  EXPECT_EQ(collective_name("c10d::allreduce_"), "allreduce");
  EXPECT_EQ(collective_name("gloo:all_reduce"), "allreduce");
  EXPECT_EQ(collective_name("c10d::_allgather_base_"), "allgather");
  EXPECT_EQ(collective_name("allgather_into_tensor_coalesced"), "allgather");
  EXPECT_EQ(collective_name("_reduce_scatter_base"), "reduce_scatter");
  EXPECT_EQ(collective_name("ncclDevKernel_AllGather_RING_LL"), "allgather");
  EXPECT_EQ(collective_name("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), "reduce_scatter");
  EXPECT_EQ(collective_name("c10d::recv_any_source_"), "recv");
  EXPECT_EQ(collective_name("init"), "");
  EXPECT_EQ(collective_name("wait"), "");
  EXPECT_EQ(collective_name("aten::add"), "");
}

TEST(JobTrace, DtypesInEitherSpelling) {
  EXPECT_EQ(dtype_name("Float"), "float32");
  EXPECT_EQ(dtype_name("float"), "float32");
  EXPECT_EQ(dtype_name("c10::BFloat16"), "bfloat16");
  EXPECT_EQ(dtype_name("long int"), "int64");
  EXPECT_EQ(dtype_bytes("BFloat16"), 2);
  EXPECT_EQ(dtype_bytes("float32"), 4);
  EXPECT_EQ(dtype_bytes("Double"), 8);
  EXPECT_EQ(dtype_bytes("complex<float>"), 0);
}

TEST(JobTrace, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor("allreduce", 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor("allgather", 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor("reduce_scatter", 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor("alltoall", 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor("broadcast", 16), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor("barrier", 16), 0.0);
  EXPECT_DOUBLE_EQ(bus_factor("allreduce", 1), 0.0);
}

Json event(const std::string& cat, const std::string& name, double ts, double dur, int tid, Json args = Json::object()) {
  return Json{{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 1}, {"tid", tid}, {"ts", ts}, {"dur", dur},
              {"args", args}};
}

Json nccl_record(double ts, int64_t nelems, const std::string& coll = "allreduce") {
  return event("cpu_op", "record_param_comms", ts, 5, 1,
               {{"Collective name", coll}, {"dtype", "BFloat16"}, {"In msg nelems", nelems},
                {"Out msg nelems", coll == "allgather" ? nelems * 2 : nelems}, {"Process Group Name", "0"},
                {"Group size", 2}});
}

Json nccl_kernel(double ts, double dur, const std::string& name = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL") {
  return event("kernel", name, ts, dur, 7, {{"Process Group Name", "0"}});
}

// Rank `rank` of 2 on GPUs: one step [0, 1000) us; compute kernels at
// [100, 400) and [500, 700); an allreduce of 1M bf16 issued at 300, its
// kernel [350, 550); an all-gather of 1000 (x2 out) issued at 600, its
// kernel [650, 900).
Json gpu_trace(int rank, int64_t first_nelems = 1 << 20) {
  Json events = Json::array({
      event("user_annotation", "ProfilerStep#4", 0, 1000, 1),
      event("gpu_user_annotation", "ProfilerStep#4", 90, 900, 7),
      event("kernel", "sm90_gemm", 100, 300, 7),
      event("kernel", "elementwise", 500, 200, 7),
      nccl_record(300, first_nelems),
      nccl_kernel(350, 200),
      nccl_record(600, 1000, "allgather"),
      nccl_kernel(650, 250, "ncclDevKernel_AllGather_RING_LL"),
      event("cpu_op", "record_param_comms", 950, 1, 1, {{"Collective name", "wait"}}),
  });
  return Json{{"distributedInfo",
               {{"backend", "nccl"}, {"rank", rank}, {"world_size", 2},
                {"pg_config", Json::array({{{"pg_name", "0"}, {"pg_desc", "default_pg"},
                                             {"backend_config", "cuda:nccl"}, {"pg_size", 2},
                                             {"ranks", {0, 1}}}})}}},
              {"traceEvents", events}};
}

TEST(JobTrace, NcclTraceWorkedByHand) {
  JobTrace job;
  job.world_size = 2;
  for (int r = 0; r < 2; ++r) job.ranks.push_back(read_kineto(gpu_trace(r), "rank" + std::to_string(r)));
  const RankTrace& r0 = job.ranks[0];
  EXPECT_EQ(r0.device, "cuda");
  ASSERT_EQ(r0.step_numbers, std::vector<int>{4});  // the GPU track's copy is not a second step
  ASSERT_EQ(r0.collectives.size(), 2u);             // "wait" moves nothing
  const Collective& ar = r0.collectives[0];
  EXPECT_EQ(ar.name, "allreduce");
  EXPECT_EQ(ar.dtype, "bfloat16");
  EXPECT_EQ(ar.bytes, 2 << 20);
  EXPECT_EQ(ar.step, 4);
  EXPECT_DOUBLE_EQ(ar.run.begin, 350);
  EXPECT_DOUBLE_EQ(ar.run.end, 550);
  EXPECT_EQ(r0.collectives[1].bytes, 2 * 1000 * 2);  // all-gather: nccl-tests' size is the output

  check_consistent(job);
  const JobSummary s = summarize(job);
  ASSERT_EQ(s.steps.size(), 2u);
  const StepFigures& f = s.steps[0];
  EXPECT_DOUBLE_EQ(f.time_us, 1000);
  // comm: [350, 550) + [650, 900) = 450; under compute: [350, 400) + [500, 550) + [650, 700) = 150.
  EXPECT_DOUBLE_EQ(f.comm_us, 450);
  EXPECT_DOUBLE_EQ(f.overlapped_us, 150);
  EXPECT_DOUBLE_EQ(f.exposed_us, 300);
  EXPECT_DOUBLE_EQ(f.compute_us, 500);
  EXPECT_EQ(f.collectives, 2);
  EXPECT_EQ(f.bytes, (2 << 20) + 4000);
  ASSERT_EQ(s.classes.size(), 2u);
  const CollectiveClass& k = s.classes[1];  // by name: allgather, then allreduce
  EXPECT_EQ(k.name, "allreduce");
  EXPECT_EQ(k.count, 2);
  EXPECT_DOUBLE_EQ(k.time_p50_us, 200);
  EXPECT_DOUBLE_EQ(k.algbw_gbs, (2 << 20) / 200.0 / 1e3);
  EXPECT_DOUBLE_EQ(k.busbw_gbs, k.algbw_gbs * 1.0);  // 2(n-1)/n at n = 2
}

// Rank 1's allreduce kernel starts 50 us later ([400, 600)): rank 0's
// [350, 550) waits [350, 400) and moves [400, 550); rank 1 waits none.
TEST(JobTrace, WaitingIsSplitAtTheLastRanksStart) {
  JobTrace job;
  job.world_size = 2;
  job.ranks.push_back(read_kineto(gpu_trace(0), "rank0"));
  Json late = gpu_trace(1);
  for (auto& e : late["traceEvents"])
    if (e["name"] == "ncclDevKernel_AllReduce_Sum_bf16_RING_LL") e["ts"] = 400;
  job.ranks.push_back(read_kineto(late, "rank1"));
  const JobSummary s = summarize(job);
  ASSERT_TRUE(s.split) << s.split_note;
  EXPECT_DOUBLE_EQ(s.steps[0].waiting_us, 50);
  EXPECT_DOUBLE_EQ(s.steps[0].moving_us, 450 - 50);
  EXPECT_DOUBLE_EQ(s.steps[1].waiting_us, 0);
  const CollectiveClass& k = s.classes[1];
  ASSERT_EQ(k.name, "allreduce");
  EXPECT_DOUBLE_EQ(k.wait_p50_us, 25);  // the median of 50 and 0
  EXPECT_DOUBLE_EQ(k.move_p50_us, 175);  // of 150 and 200
  EXPECT_DOUBLE_EQ(k.busbw_moving_gbs, (2 << 20) / 175.0 / 1e3);

  // Clocks a second apart: no run of rank 1 overlaps rank 0's: no split, and why.
  Json shifted = gpu_trace(1);
  for (auto& e : shifted["traceEvents"]) e["ts"] = e["ts"].get<double>() + 1e6;
  job.ranks[1] = read_kineto(shifted, "rank1");
  const JobSummary t = summarize(job);
  EXPECT_FALSE(t.split);
  EXPECT_NE(t.split_note.find("clocks differ"), std::string::npos) << t.split_note;
  EXPECT_DOUBLE_EQ(t.steps[0].waiting_us, 0);
}

TEST(JobTrace, RanksThatDisagreeAreNamed) {
  JobTrace job;
  job.world_size = 2;
  job.ranks.push_back(read_kineto(gpu_trace(0), "rank0"));
  job.ranks.push_back(read_kineto(gpu_trace(1, 1000), "rank1"));
  try {
    check_consistent(job);
    ADD_FAILURE() << "a size mismatch passed";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "ranks disagree in group 0: collective 1 of ProfilerStep#4 is rank 0's allreduce of 1048576 "
                 "bfloat16 elements but rank 1's allreduce of 1000 bfloat16 elements (a job that hangs or "
                 "reduces the wrong tensors there)");
  }
}

// Gloo on the CPU: c10d's op issues on the training thread, Gloo's
// annotation runs on its own; compute is the training thread's ops less
// the c10d calls.
TEST(JobTrace, GlooTraceWorkedByHand) {
  Json events = Json::array({
      event("user_annotation", "ProfilerStep#0", 0, 100, 1),
      event("cpu_op", "aten::conv2d", 10, 40, 1),  // compute [10, 50)
      event("cpu_op", "autograd::engine::evaluate_function: X", 50, 30, 1),  // [50, 80) holds the issue
      event("cpu_op", "c10d::allreduce_", 60, 2, 1,
            {{"Input Dims", Json::array({Json::array({Json::array({250})}), Json::array()})},
             {"Input type", {"TensorList", ""}}}),
      event("user_annotation", "gloo:all_reduce", 70, 20, 9,
            {{"Input Dims", Json::array({Json::array({250})})}, {"Input type", {"float"}}}),
  });
  Json doc = {{"distributedInfo",
               {{"backend", "gloo"}, {"rank", 0}, {"world_size", 1},
                {"pg_config", Json::array({{{"pg_name", "0"}, {"ranks", {0}}}})}}},
              {"traceEvents", events}};
  JobTrace job;
  job.ranks.push_back(read_kineto(doc, "gloo"));
  const RankTrace& r = job.ranks[0];
  EXPECT_EQ(r.device, "cpu");
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].dtype, "float32");
  EXPECT_EQ(r.collectives[0].bytes, 1000);
  const JobSummary s = summarize(job);
  // compute [10, 60) + [62, 80) = 68; comm [70, 90) = 20, under compute [70, 80) = 10.
  EXPECT_DOUBLE_EQ(s.steps[0].compute_us, 68);
  EXPECT_DOUBLE_EQ(s.steps[0].comm_us, 20);
  EXPECT_DOUBLE_EQ(s.steps[0].overlapped_us, 10);
  EXPECT_DOUBLE_EQ(s.steps[0].exposed_us, 10);
}

// A run still open when the profiler stopped: Kineto ends it at the stop
// and marks it unfinished, without shapes. It stays the k-th run (the next
// issue does not take it) and gives no span.
TEST(JobTrace, AnUnfinishedRunHasNoSpan) {
  const Json dims = {{"Input Dims", Json::array({Json::array({Json::array({250})})})}, {"Input type", {"TensorList"}}};
  Json events = Json::array({
      event("user_annotation", "ProfilerStep#0", 0, 100, 1),
      event("cpu_op", "c10d::allreduce_", 10, 2, 1, dims),
      event("user_annotation", "gloo:all_reduce", 12, 9999, 9, {{"finished", false}}),
      event("cpu_op", "c10d::broadcast_", 50, 2, 1, dims),
      event("user_annotation", "gloo:broadcast", 52, 20, 8,
            {{"Input Dims", Json::array({Json::array({250})})}, {"Input type", {"float"}}}),
  });
  const RankTrace r = read_kineto(Json{{"traceEvents", events}}, "f");
  ASSERT_EQ(r.collectives.size(), 2u);
  EXPECT_FALSE(r.collectives[0].has_run());
  EXPECT_EQ(r.collectives[0].bytes, -1);  // its dtype was only on the run
  ASSERT_TRUE(r.collectives[1].has_run());
  EXPECT_DOUBLE_EQ(r.collectives[1].run.begin, 52);
  EXPECT_EQ(r.collectives[1].bytes, 1000);
  JobTrace job;
  job.ranks.push_back(r);
  EXPECT_EQ(summarize(job).without_run, 1);
}

// c10d's all_gather puts its output first (allgather_(Tensor[][] outputs,
// Tensor[] inputs, ...)): the size comes from Gloo's run, whose inputs are
// the rank's 250 floats; nccl-tests' size is the gathered 2 x 250.
TEST(JobTrace, GlooAllGatherTakesItsSizeFromTheRun) {
  const Json issue_dims = {
      {"Input Dims", Json::array({Json::array({Json::array({250}), Json::array({250})}), Json::array({Json::array({250})})})},
      {"Input type", {"GenericList", "TensorList"}}};
  Json events = Json::array({
      event("user_annotation", "ProfilerStep#0", 0, 100, 1),
      event("cpu_op", "c10d::allgather_", 10, 2, 1, issue_dims),
      event("user_annotation", "gloo:all_gather", 12, 20, 9,
            {{"Input Dims", Json::array({Json::array({250})})}, {"Input type", {"float"}}}),
  });
  Json doc = {{"distributedInfo", {{"backend", "gloo"}, {"rank", 0}, {"world_size", 2},
                                   {"pg_config", Json::array({{{"pg_name", "0"}, {"ranks", {0, 1}}}})}}},
              {"traceEvents", events}};
  const RankTrace r = read_kineto(doc, "f");
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].in_nelems, 250);
  EXPECT_EQ(r.collectives[0].out_nelems, 500);
  EXPECT_EQ(r.collectives[0].bytes, 2000);
}

// NCCL runs send and recv as one SendRecv kernel; a barrier's record takes
// none (its allreduce has a record of its own).
TEST(JobTrace, NcclSendRecvKernelsPairWithSendsAndReceives) {
  Json events = Json::array({
      event("user_annotation", "ProfilerStep#0", 0, 1000, 1),
      nccl_record(100, 10, "barrier"),
      nccl_record(110, 1, "allreduce"),
      nccl_kernel(120, 5),
      nccl_record(200, 64, "send"),
      nccl_kernel(210, 30, "ncclDevKernel_SendRecv"),
      nccl_record(300, 64, "recv"),
      nccl_kernel(310, 40, "ncclDevKernel_SendRecv"),
  });
  const RankTrace r = read_kineto(Json{{"traceEvents", events}}, "f");
  ASSERT_EQ(r.collectives.size(), 4u);
  EXPECT_FALSE(r.collectives[0].has_run());  // the barrier
  EXPECT_DOUBLE_EQ(r.collectives[1].run.begin, 120);
  EXPECT_DOUBLE_EQ(r.collectives[2].run.begin, 210);
  EXPECT_DOUBLE_EQ(r.collectives[3].run.begin, 310);
  EXPECT_EQ(r.pairing_note, "");
  // A kernel of another collective stops the pairing, and says where.
  events[7]["name"] = "ncclDevKernel_AllGather_RING_LL";
  const RankTrace bad = read_kineto(Json{{"traceEvents", events}}, "f");
  EXPECT_FALSE(bad.collectives[3].has_run());
  EXPECT_NE(bad.pairing_note.find("stop pairing at collective 4 (recv issued"), std::string::npos) << bad.pairing_note;
}

// Gloo's ops name no group: with two groups on a rank, the ranks'
// collectives cannot be compared, nor split at a last start; said, not
// refused.
TEST(JobTrace, GlooWithSeveralGroupsIsReadButNotCompared) {
  JobTrace job;
  job.world_size = 2;
  for (int rank = 0; rank < 2; ++rank) {
    RankTrace r;
    r.rank = rank;
    r.world_size = 2;
    r.groups = {{"0", "default_pg", "gloo", {0, 1}}, {"1", "tp", "gloo", {0, 1}}};
    r.step_numbers = {0};
    r.steps = {{0, 100}};
    Collective c;
    c.name = "allreduce";
    c.step = 0;
    c.in_nelems = rank == 0 ? 10 : 20;  // two different groups' collectives
    c.run = {10, 20};
    r.collectives = {c};
    job.ranks.push_back(r);
  }
  EXPECT_NE(check_consistent(job).find("names no process group"), std::string::npos);
  const JobSummary s = summarize(job);
  EXPECT_FALSE(s.split);
  EXPECT_NE(s.split_note.find("names no process group"), std::string::npos);
}

TEST(JobTrace, MalformedTracesAreRefusedInOneLine) {
  EXPECT_THROW(read_kineto(Json{{"nodes", Json::array()}}, "f"), UsageError);
  Json bad = gpu_trace(0);
  bad["distributedInfo"]["rank"] = 2;  // of a world of 2
  try {
    read_kineto(bad, "f.json");
    ADD_FAILURE() << "rank 2 of 2 passed";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "f.json: distributedInfo has rank 2 of world size 2");
  }
}

}  // namespace
}  // namespace dtbench::job
