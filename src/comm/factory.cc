#include "comm/factory.h"

#include <functional>

#include <fmt/format.h>


#include "build_config.h"  // generated: DTBENCH_HAVE_MPI, DTBENCH_HAVE_CUDA
#include "comm/communicator.h"
#include "comm/gloo/gloo_communicator.h"
#include "comm/store.h"
#include "compat/torch_version.h"
#include "core/error.h"
#if DTBENCH_HAVE_MPI
#include "comm/mpi/mpi_communicator.h"
#include "comm/mpi/mpi_rendezvous.h"
#endif
#if DTBENCH_HAVE_NCCL
#include "comm/nccl/nccl_communicator.h"
#endif

namespace dtbench::comm {
namespace {

using Maker = std::function<std::unique_ptr<Communicator>(const launch::World&, const CommOptions&)>;

struct Entry {
  BackendInfo info;
  Maker make;  // empty when not built
};

// known_backends()'s rows with their versions and constructors.
std::vector<Entry> table() {
  std::vector<Entry> t;
  for (auto& info : known_backends()) {
    Entry e{info, {}};
    if (info.name == "gloo") {
      e.info.version = std::string("c10d ProcessGroupGloo, LibTorch ") + compat::torch_version();
      e.make = make_gloo_communicator;
    }
#if DTBENCH_HAVE_MPI
    if (info.name == "mpi") {
      e.info.version = mpi_library_version();
      e.make = make_mpi_communicator;
    }
#endif
#if DTBENCH_HAVE_NCCL
    if (info.name == "nccl") {
      e.info.version = nccl_library_version();
      e.make = make_nccl_communicator;
    }
#endif
    t.push_back(e);
  }
  return t;
}

}  // namespace

std::vector<BackendInfo> backends() {
  std::vector<BackendInfo> out;
  for (const auto& e : table()) out.push_back(e.info);
  return out;
}

std::unique_ptr<Communicator> make_communicator(const launch::World& world,
                                                const CommOptions& opts) {
  require_backend(opts.backend);
  for (const auto& e : table())
    if (e.info.name == opts.backend) return e.make(world, opts);
  throw UsageError("unknown backend " + opts.backend);
}

std::unique_ptr<Communicator> make_group_communicator(const launch::World& world,
                                                      const CommOptions& opts,
                                                      const Group& group) {
  require_backend(opts.backend);
  if (opts.backend == "gloo") return make_gloo_group_communicator(world, opts, group);
#if DTBENCH_HAVE_NCCL
  if (opts.backend == "nccl") return make_nccl_group_communicator(world, opts, group);
#endif
  if (group.size == world.world_size && group.rank == world.rank)
    return make_communicator(world, opts);
  throw UsageError(fmt::format(
      "the {} backend cannot form a group of {} of the job's {} ranks; use --backend gloo or nccl",
      opts.backend, group.size, world.world_size));
}

launch::World resolve_master(const launch::World& world, const CommOptions& opts) {
  if (world.master_given || opts.backend == "mpi" || world.world_size < 2 ||
      (world.source != "openmpi" && world.source != "pmi"))
    return world;
#if DTBENCH_HAVE_MPI
  return publish_master_over_mpi(world, opts.iface, opts.timeout);
#else
  return world;
#endif
}

nlohmann::ordered_json library_versions() {
  nlohmann::ordered_json j;
  j["libtorch"] = compat::torch_version();
  for (const auto& e : table()) j[e.info.name] = e.info.built ? e.info.version : "not built";
  return j;
}

}  // namespace dtbench::comm
