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

std::vector<Entry> table() {
  std::vector<Entry> t;
  t.push_back({{"gloo", true, std::string("c10d ProcessGroupGloo, LibTorch ") + compat::torch_version(),
                "CPU collectives over TCP (c10d ProcessGroupGloo)", true},
               make_gloo_communicator});
#if DTBENCH_HAVE_MPI
  t.push_back({{"mpi", true, mpi_library_version(),
                "MPI collectives through the MPI C API (run under mpirun)", false},
               make_mpi_communicator});
#else
  t.push_back({{"mpi", false, "", "MPI collectives (not built: no MPI found at build time)"}, {}});
#endif
#if DTBENCH_HAVE_NCCL
  t.push_back({{"nccl", true, nccl_library_version(),
                "GPU collectives (c10d ProcessGroupNCCL; CUDA tensors, one GPU per rank)", true},
               make_nccl_communicator});
#else
  t.push_back({{"nccl", false, "", "GPU collectives (not built: this LibTorch has no CUDA; build the wheel flavour, make TORCH=wheel)"}, {}});
#endif
  return t;
}

}  // namespace

std::vector<BackendInfo> backends() {
  std::vector<BackendInfo> out;
  for (const auto& e : table()) out.push_back(e.info);
  return out;
}

void require_c10d_group(const std::string& backend) {
  for (const auto& e : table())
    if (e.info.name == backend && !e.info.c10d_group)
      throw UsageError(fmt::format(
          "--reducer ddp drives c10d::Reducer, which needs a c10d process group; the {} backend "
          "has none in this build (use --backend gloo, or --reducer overlap/sync with {})",
          backend, backend));
}

void require_backend(const std::string& name) {
  std::string known;
  for (const auto& e : table()) {
    if (e.info.name == name) {
      if (!e.info.built) throw UsageError(fmt::format("backend '{}' is not built into this dtbench: {}", name, e.info.description));
      return;
    }
    known += (known.empty() ? "" : ", ") + e.info.name;
  }
  throw UsageError(fmt::format("unknown backend '{}' (valid: {})", name, known));
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
