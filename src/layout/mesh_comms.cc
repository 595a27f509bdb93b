#include "layout/mesh_comms.h"

#include <algorithm>

#include <fmt/format.h>

#include "comm/communicator.h"
#include "comm/store.h"
#include "core/error.h"

namespace dtbench::layout {

MeshComms make_mesh_comms(const launch::World& world, const comm::CommOptions& opts, const ParallelDims& dims) {
  DTBENCH_CHECK(dims.world() == world.world_size, "the mesh is not the job's size");
  MeshComms m;
  m.dims = dims;
  auto partial = [&](int degree) { return degree > 1 && degree < world.world_size; };
  const bool sub_groups = partial(dims.dp) || partial(dims.tp) || partial(dims.pp);
  if (!sub_groups) {
    m.world = comm::make_communicator(world, opts);
  } else {
    if (opts.backend == "mpi")
      throw UsageError(fmt::format("--backend mpi: the layout {} needs sub-group communicators, which dtbench's "
                                   "mpi backend does not make (run it on gloo)",
                                   dims.describe()));
    auto store = comm::connect_store(world, opts.timeout);
    m.world = comm::make_group_communicator(world, opts, {store, "dtbench/mesh/all", world.rank, world.world_size});
    auto group = [&](Dim d) -> std::unique_ptr<comm::Communicator> {
      const auto groups = dims.groups(d);
      for (std::size_t g = 0; g < groups.size(); ++g) {
        const auto& members = groups[g];
        const auto it = std::find(members.begin(), members.end(), world.rank);
        if (it == members.end()) continue;
        return comm::make_group_communicator(
            world, opts,
            {store, fmt::format("dtbench/mesh/{}{}", to_string(d), g), static_cast<int>(it - members.begin()),
             static_cast<int>(members.size())});
      }
      return nullptr;
    };
    if (partial(dims.dp)) m.dp_own_ = group(Dim::kDp);
    if (partial(dims.tp)) m.tp_own_ = group(Dim::kTp);
    if (partial(dims.pp)) m.pp_own_ = group(Dim::kPp);
  }
  auto pick = [&](int degree, const std::unique_ptr<comm::Communicator>& own) -> comm::Communicator* {
    if (degree == 1) return nullptr;
    return degree == world.world_size ? m.world.get() : own.get();
  };
  m.dp = pick(dims.dp, m.dp_own_);
  m.tp = pick(dims.tp, m.tp_own_);
  m.pp = pick(dims.pp, m.pp_own_);
  return m;
}

}  // namespace dtbench::layout
