#include "bench/comm/buffers.h"

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

std::int64_t run_and_count_wrong(const CollectiveDef& def, const CollArgs& args_in, bool in_place) {
  CollArgs args = args_in;
  args.in_place = in_place;
  Buffers b = prepare_buffers(def, args, in_place);
  def.run(args, b.in, b.out)->wait(args.comm->timeout());
  const at::Tensor expected = def.expected(args);
  if (!expected.defined()) return 0;
  const bool reduction = comm::is_reduction(def.kind);
  return count_wrong(b.out, expected, tolerance(DataSpec{args.dtype, args.op, reduction, args.nranks}));
}

}  // namespace dtbench::bench
