#include "bench/comm/buffers.h"

#include <algorithm>
#include <vector>

#include <ATen/ATen.h>

#include "bench/comm/data.h"

namespace dtbench::bench {

namespace {

// A fresh output: -1 everywhere; for bool, where -1 is true (a value rows
// expect), the negation of the expected result, so that an element the
// collective never writes is wrong whatever it should hold. (reduce's and
// gather's non-roots keep the -1 fill: what they must find is the fill.)
at::Tensor fresh_output(const CollectiveDef& def, const CollArgs& args, const at::TensorOptions& options) {
  const bool must_stay = (def.kind == comm::Collective::kReduce || def.kind == comm::Collective::kGather) &&
                         args.rank != args.root;
  if (args.dtype == comm::DType::kBool && !must_stay) {
    CollArgs a = args;
    a.in_place = false;
    const at::Tensor expected = def.expected(a);
    if (expected.defined() && expected.numel() == def.out_count(args)) return at::logical_not(expected).to(options);
  }
  return at::full({def.out_count(args)}, -1, options);
}

}  // namespace

Buffers prepare_buffers(const CollectiveDef& def, const CollArgs& args, bool in_place) {
  const auto options = at::TensorOptions().dtype(comm::to_scalar_type(args.dtype)).device(args.device);
  const at::Tensor input = def.input(args);
  Buffers b;
  if (!in_place) {
    b.in = input;
    b.out = fresh_output(def, args, options);
  } else if (def.in_place == InPlace::kSame) {
    b.out = input.clone();
    b.in = b.out;
  } else {  // kRankChunk
    b.out = fresh_output(def, args, options);
    const auto c = def.in_count(args);
    b.in = b.out.narrow(0, args.rank * c, c);
    b.in.copy_(input);
  }
  return b;
}

std::uint64_t in_flight_seed(std::uint64_t seed, int k) {
  return k == 0 ? seed : seed ^ (0xD6E8FEB86659FD93ULL * static_cast<std::uint64_t>(k));
}

std::int64_t run_and_count_wrong(const CollectiveDef& def, const CollArgs& args_in, bool in_place, int in_flight) {
  return run_and_count_wrong(def, args_in, in_place, in_flight, {args_in.comm});
}

std::int64_t run_and_count_wrong(const CollectiveDef& def, const CollArgs& args_in, bool in_place, int in_flight,
                                 const std::vector<comm::Communicator*>& lanes) {
  std::vector<CollArgs> args(static_cast<std::size_t>(std::max(in_flight, 1)), args_in);
  std::vector<Buffers> bufs;
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (!lanes.empty()) args[k].comm = lanes[k % lanes.size()];
    args[k].in_place = in_place;
    args[k].seed = in_flight_seed(args_in.seed, static_cast<int>(k));
    bufs.push_back(prepare_buffers(def, args[k], in_place));
  }
  std::vector<comm::WorkPtr> works;
  for (std::size_t k = 0; k < args.size(); ++k) works.push_back(def.run(args[k], bufs[k].in, bufs[k].out));
  for (auto& w : works) w->wait(args_in.comm->timeout());
  const bool reduction = comm::is_reduction(def.kind);
  std::int64_t wrong = 0;
  for (std::size_t k = 0; k < args.size(); ++k) {
    const at::Tensor expected = def.expected(args[k]);
    if (expected.defined())
      wrong += count_wrong(bufs[k].out, expected, tolerance(DataSpec{args[k].dtype, args[k].op, reduction, args[k].nranks}));
  }
  return wrong;
}

}  // namespace dtbench::bench
