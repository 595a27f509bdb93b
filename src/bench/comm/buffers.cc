#include "bench/comm/buffers.h"

#include <algorithm>
#include <vector>

#include <ATen/ATen.h>

#include "bench/comm/data.h"

namespace dtbench::bench {

Buffers prepare_buffers(const CollectiveDef& def, const CollArgs& args, bool in_place) {
  const auto options = at::TensorOptions().dtype(comm::to_scalar_type(args.dtype)).device(args.device);
  const at::Tensor input = def.input(args);
  Buffers b;
  if (!in_place) {
    b.in = input;
    b.out = at::full({def.out_count(args)}, -1, options);
  } else if (def.in_place == InPlace::kSame) {
    b.out = input.clone();
    b.in = b.out;
  } else {  // kRankChunk
    b.out = at::full({def.out_count(args)}, -1, options);
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
  std::vector<CollArgs> args(static_cast<std::size_t>(std::max(in_flight, 1)), args_in);
  std::vector<Buffers> bufs;
  for (std::size_t k = 0; k < args.size(); ++k) {
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
