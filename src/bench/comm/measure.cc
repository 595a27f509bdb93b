#include "bench/comm/measure.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <ATen/ATen.h>

#include "bench/comm/buffers.h"
#include "bench/comm/data.h"
#include "bench/comm/iteration_stats.h"
#include "core/cpu_time.h"
#include "core/error.h"
#include "device/device.h"

namespace dtbench::bench {
namespace {

using Clock = std::chrono::steady_clock;

// On a GPU an operation has finished when the device has: gloo's wait only
// orders the current stream after it. Under a graph capture (`settle`
// false) the wait only orders the stream, and nothing is synchronised.
void run_once(const CollectiveDef& def, const CollArgs& args, const at::Tensor& in, at::Tensor& out, bool settle) {
  def.run(args, in, out)->wait(args.comm->timeout());
  if (settle) device::synchronize(args.device);
}

}  // namespace

double copy_time_us(const at::Tensor& src, const at::Tensor& dst, std::int64_t bytes, int iters,
                    const c10::Device& device) {
  if (bytes <= 0) return 0;
  at::Tensor s = src.narrow(0, 0, bytes), d = dst.narrow(0, 0, bytes);
  d.copy_(s);  // first touch
  device::synchronize(device);
  std::vector<double> t;
  const int copies = std::clamp(iters, 3, 20);
  const double start = steady_now_us();
  for (int i = 0; i < copies; ++i) {
    const double a = steady_now_us();
    d.copy_(s);
    device::synchronize(device);
    t.push_back(steady_now_us() - a);
    if (i >= 2 && steady_now_us() - start > 50e3) break;
  }
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}


Arena::Arena(const CollectiveDef& def, const std::vector<CollArgs>& sizes, bool in_place_) : in_place(in_place_) {
  // Any valid data will do for timing (the check runs on fresh buffers):
  // ones, written at memory speed, one element's bytes each. Sized for the
  // most any size needs: with uneven parts a rank's part need not grow
  // with the size.
  DTBENCH_CHECK(!sizes.empty(), "Arena: no sizes");
  const auto options = at::TensorOptions().dtype(comm::to_scalar_type(sizes[0].dtype)).device(sizes[0].device);
  std::int64_t in_cap = 1, out_cap = 1;
  for (const auto& a : sizes) {
    in_cap = std::max(in_cap, def.in_count(a));
    out_cap = std::max(out_cap, def.out_count(a));
  }
  out = at::ones({out_cap}, options);
  if (!in_place) in = at::ones({in_cap}, options);
}

std::int64_t Arena::windows(std::int64_t in_count, std::int64_t out_count) const {
  return buffer_windows(in.defined() ? in.numel() : 0, in_count, out.numel(), out_count);
}

std::pair<at::Tensor, at::Tensor> Arena::window(const CollectiveDef& def, const CollArgs& a, std::int64_t k) const {
  const std::int64_t ic = def.in_count(a), oc = def.out_count(a);
  at::Tensor o = out.narrow(0, k * oc, oc);
  if (!in_place) return {in.narrow(0, k * ic, ic), o};
  if (def.in_place == InPlace::kSame) return {o, o};
  return {o.narrow(0, a.rank * ic, ic), o};  // kRankChunk
}

int group_index(const Job& job, int rank) {
  for (std::size_t g = 0; g < job.groups.size(); ++g)
    if (std::find(job.groups[g].begin(), job.groups[g].end(), rank) != job.groups[g].end()) return static_cast<int>(g);
  return 0;
}

std::vector<report::CommTiming> measure(const CollectiveDef& def, const CollArgs& args, bool in_place,
                                        const CommBenchOptions& opts, const ClockSync& clock, const Arena& arena,
                                        const Job& job, const std::vector<std::uint64_t>& group_bytes,
                                        double copy_rate_gbs, std::pair<double, double>* window) {
  comm::Communicator& world = job.world;
  const int me = world.rank();
  const std::int64_t windows = arena.windows(def.in_count(args), def.out_count(args));
  // One iteration: agg_iters operations issued back to back, operation k of
  // iteration i on window (i * agg + k) mod windows, then waited together.
  const std::int64_t agg = opts.agg_iters;
  // --concurrent: each operation runs on every lane at once, each lane on
  // the next window. Their args made once, not in the timed loop.
  std::vector<CollArgs> lane_args{args};
  for (std::size_t l = 1; l < job.lanes.size(); ++l) {
    lane_args.push_back(args);
    lane_args.back().comm = job.lanes[l];
  }
  const auto lanes = static_cast<std::int64_t>(lane_args.size());
  // The windows' views, made before the timed loop: making one is LibTorch
  // work (two narrows: microseconds in 1.13) that a latency row would
  // otherwise count. Every lane's window of a size has the same shape, and
  // no more windows are made than the iterations reach.
  const std::int64_t reached = std::max<std::int64_t>(1, std::max(opts.warmup, opts.iters) * agg * lanes);
  std::vector<std::pair<at::Tensor, at::Tensor>> views;
  views.reserve(static_cast<std::size_t>(std::min(windows, reached)));
  for (std::int64_t w = 0; w < std::min(windows, reached); ++w) views.push_back(arena.window(def, args, w));
  auto view = [&](std::int64_t k) -> std::pair<at::Tensor, at::Tensor>& {
    return views[static_cast<std::size_t>(k % windows)];
  };
  // One iteration, waited for; `settle`: and the device synchronised (not
  // while a graph is captured, which forbids it).
  auto iteration = [&](std::int64_t i, bool settle) {
    if (agg == 1 && lanes == 1) {
      auto& [in, out] = view(i);
      run_once(def, args, in, out, settle);
      return;
    }
    std::vector<comm::WorkPtr> works;
    for (std::int64_t k = 0; k < agg; ++k) {
      for (std::int64_t l = 0; l < lanes; ++l) {
        const CollArgs& a = lane_args[static_cast<std::size_t>(l)];
        auto& [in, out] = view((i * agg + k) * lanes + l);
        if (opts.blocking && lanes == 1) {
          run_once(def, a, in, out, settle);  // waited (and synchronised) before the next
          continue;
        }
        works.push_back(def.run(a, in, out));
      }
      if (opts.blocking) {  // this operation's lanes, waited before the next
        for (auto& w : works) w->wait(args.comm->timeout());
        works.clear();
        if (settle) device::synchronize(args.device);
      }
    }
    for (auto& w : works) w->wait(args.comm->timeout());
    if (settle) device::synchronize(args.device);
  };
  for (int i = 0; i < opts.warmup; ++i) iteration(i, true);
  const bool delayed = opts.delay_rank == me && opts.delay_us > 0;
  const double my_offset = clock.offset_us[static_cast<std::size_t>(me)];
  const auto iters = static_cast<std::size_t>(opts.iters);
  // -G N (nccl-tests' --cudagraph): the -n iterations captured once into a
  // CUDA graph (nothing runs while it is captured), launched once untimed,
  // then N timed launches; a sample is one launch's time per operation.
  std::unique_ptr<device::Graph> graph;
  std::size_t samples = iters;
  double ops_per_sample = static_cast<double>(agg);
  if (opts.cuda_graph > 0) {
    graph = device::capture_graph(args.device, [&] {
      for (std::size_t i = 0; i < iters; ++i) iteration(static_cast<std::int64_t>(i), false);
    });
    graph->replay();
    device::synchronize(args.device);
    samples = static_cast<std::size_t>(opts.cuda_graph);
    ops_per_sample *= static_cast<double>(iters);
  }
  std::vector<double> mine(2 * samples + 3);  // starts, times, cores busy, wrong elements, copy rate
  world.barrier();  // every group starts together
  const double cpu_start = process_cpu_seconds();
  const auto wall_start = Clock::now();
  for (std::size_t i = 0; i < samples; ++i) {
    if (delayed) std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(opts.delay_us));
    const double s = steady_now_us();
    if (graph) {
      graph->replay();
      device::synchronize(args.device);
    } else {
      iteration(static_cast<std::int64_t>(i), true);
    }
    const double e = steady_now_us();
    mine[i] = s - my_offset;
    mine[samples + i] = (e - s) / ops_per_sample;  // per operation
  }
  const double wall_us = std::chrono::duration<double, std::micro>(Clock::now() - wall_start).count();
  if (window != nullptr) *window = {steady_now_us() - wall_us, steady_now_us()};
  mine[2 * samples] = wall_us > 0 ? (process_cpu_seconds() - cpu_start) * 1e6 / wall_us : 0;

  CollArgs check_args = args;
  check_args.in_place = in_place;
  // With -m, the check runs up to 4 in flight (each a full set of fresh
  // buffers: 1024 of them at a large size would not fit); with -z 1 one at
  // a time, as the timed operations ran.
  // --concurrent: one on every lane, up to 4 lanes at once (in batches
  // beyond that, for the same reason).
  std::int64_t wrong_here = 0;
  for (std::size_t b = 0; opts.check && b < lane_args.size(); b += 4) {
    std::vector<comm::Communicator*> batch;
    for (std::size_t l = b; l < std::min(b + 4, lane_args.size()); ++l) batch.push_back(lane_args[l].comm);
    const int in_flight = std::max(opts.blocking ? 1 : std::min(opts.agg_iters, 4), static_cast<int>(batch.size()));
    wrong_here += run_and_count_wrong(def, check_args, in_place, in_flight, batch);
  }
  mine[2 * samples + 1] = static_cast<double>(wrong_here);
  mine[2 * samples + 2] = copy_rate_gbs;

  // Every rank's samples, cores busy and wrong elements to every rank.
  const auto per_rank = static_cast<std::int64_t>(mine.size());
  at::Tensor local = at::from_blob(mine.data(), {per_rank}, at::kDouble).clone();
  at::Tensor all = at::zeros({per_rank * world.size()}, at::kDouble);
  world.allgather(local, all)->wait(world.timeout());
  const auto* p = all.data_ptr<double>();

  std::vector<report::CommTiming> out;
  for (std::size_t g = 0; g < job.groups.size(); ++g) {
    const auto& members = job.groups[g];
    report::CommTiming t;
    t.ran = true;
    std::vector<RankIterations> ranks(members.size());
    double util = 0, wrong = 0;
    std::vector<double> copy_gbs;
    for (std::size_t k = 0; k < members.size(); ++k) {
      const double* q = p + members[k] * per_rank;
      auto& ri = ranks[k];
      ri.start_us.assign(q, q + samples);
      ri.time_us.assign(q + samples, q + 2 * samples);
      util += q[2 * samples];
      wrong += q[2 * samples + 1];
      if (q[2 * samples + 2] > 0) copy_gbs.push_back(q[2 * samples + 2]);
      double rank_sum = 0;
      for (double x : ri.time_us) rank_sum += x;
      t.rank_us.push_back(rank_sum / static_cast<double>(samples));
      t.samples_us.push_back(ri.time_us);
    }
    const auto n = static_cast<double>(members.size());
    t.cpu_util = util / n;
    t.time_us = row_time(t.rank_us, def.first_rank_times ? RowTime::kRank0 : opts.average);
    if (job.groups.size() == 1 && opts.topology.ranks() == world.size())
      t.node_us = launch::per_node_mean(opts.topology, t.rank_us);
    const auto a = analyse_iterations(ranks, opts.percentiles, opts.spike_mad, clock.error_us, ops_per_sample);
    t.percentile_us = a.percentile_us;
    t.lateness_us = a.lateness_us;
    t.late_rank = a.late_rank >= 0 ? members[static_cast<std::size_t>(a.late_rank)] : -1;
    t.late_us = a.late_us;
    t.straggler = a.straggler;
    t.spikes = a.spikes;
    t.spike_list = a.spike_list;
    for (auto& sp : t.spike_list) sp.rank = members[static_cast<std::size_t>(sp.rank)];
    // algbw in GB/s (1e9 bytes): bytes per microsecond / 1e3.
    // --concurrent: the lanes' messages together.
    t.algbw_gbs = t.time_us > 0 ? static_cast<double>(group_bytes[g]) * static_cast<double>(lanes) / t.time_us / 1e3 : 0;
    t.busbw_gbs = t.algbw_gbs * def.bus_factor(static_cast<int>(members.size()));
    t.wrong = static_cast<std::int64_t>(wrong);
    if (def.kind == comm::Collective::kBarrier) t.wrong += barrier_violations(ranks, clock.error_us);
    // -c 0 compares no data; a barrier's check is its arrival order, free
    // of data, so it stays.
    if (!opts.check && def.kind != comm::Collective::kBarrier) t.wrong = report::kNotChecked;
    if (!copy_gbs.empty()) {
      std::sort(copy_gbs.begin(), copy_gbs.end());
      t.ceiling_gbs = copy_gbs[copy_gbs.size() / 2];
      t.of_ceiling = t.busbw_gbs / t.ceiling_gbs;
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace dtbench::bench
