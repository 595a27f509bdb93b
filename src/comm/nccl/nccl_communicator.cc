#include "comm/nccl/nccl_communicator.h"

#include <map>

#include <fmt/format.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "comm/c10d/c10d_communicator.h"
#include "comm/error_text.h"
#include "comm/store.h"
#include "compat/nccl_compat.h"
#include "core/error.h"
#include "device/device.h"

namespace dtbench::comm {
namespace {

std::string host_name() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// Every rank publishes "host PCI-bus-id" and reads everyone's: two ranks on
// one GPU (CUDA_VISIBLE_DEVICES pointing both at it, or more ranks than
// GPUs remapped by hand) is refused by all of them with the same line,
// before NCCL would fail with "Duplicate GPU detected".
void check_one_gpu_per_rank(c10d::Store& store, int rank, int size, const c10::Device& gpu) {
  const std::string mine = host_name() + " " + device::pci_bus_id(gpu);
  store.set(fmt::format("gpu/{}", rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::map<std::string, int> owner;
  for (int r = 0; r < size; ++r) {
    const auto v = store.get(fmt::format("gpu/{}", r));
    const std::string id(v.begin(), v.end());
    const auto [it, fresh] = owner.emplace(id, r);
    if (!fresh)
      throw UsageError(fmt::format(
          "--backend nccl: ranks {} and {} both use GPU {} on host {}; NCCL needs one GPU per rank "
          "(each rank takes the GPU of its LOCAL_RANK: run at most as many ranks per node as it has "
          "GPUs, or use --backend gloo)",
          it->second, r, id.substr(id.find(' ') + 1), id.substr(0, id.find(' '))));
  }
}

}  // namespace

std::string nccl_library_version() { return compat::nccl_version(); }

namespace {

// group.store null: the whole job, through a store of its own.
std::unique_ptr<Communicator> make_nccl(const launch::World& world, const CommOptions& opts, const Group& group) {
  // No GPU, or more ranks on this node than GPUs: one line, before anything
  // touches NCCL.
  device::check_available("cuda", world.local_world_size);
  const c10::Device gpu = device::select("cuda", world.local_rank);
  auto rdv = c10d_rendezvous("nccl", world, opts, group);
  C10dBackendSpec& spec = rdv.spec;
  const c10::intrusive_ptr<c10d::Store> prefix = rdv.prefix;
  check_one_gpu_per_rank(*prefix, spec.rank, spec.size, gpu);
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg;
  try {
    pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefix, spec.rank, spec.size,
                                                     compat::nccl_options(opts.timeout));
    compat::nccl_bind_and_connect(*pg, gpu);
  } catch (const std::exception& e) {
    throw CommError(fmt::format("nccl: rank {} could not create its communicator on {} (is a rank missing?): {}", spec.rank,
                                device::describe(gpu), one_line(e)));
  }
  spec.backend = pg;
  // NCCL takes every other dtype and op dtbench names (avg since NCCL 2.10;
  // bool as uint8, its sum as max and prod as min, in c10d); the comm
  // benchmark's exact check is the judge.
  spec.unsupported = [](Collective c, DType dtype, ReduceOp op) {
    if (dtype == DType::kBool && is_reduction(c) && op == ReduceOp::kAvg) return bool_avg_reason("nccl");
    // float8 (NCCL >= 2.24, GPUs of compute capability 8.9 or later: NCCL's
    // own error otherwise) reduces exactly on the test data's small
    // integers; its avg divides in 8 bits and is not checked.
    if (is_float8(dtype) && is_reduction(c) && op == ReduceOp::kAvg)
      return fmt::format("nccl: avg of {} is not checked exactly (its division rounds in 8 bits); use sum",
                         to_string(dtype));
    return std::string();
  };
  spec.make_group = [pg, prefix, rank = spec.rank, size = spec.size] {
    return compat::nccl_process_group(pg, prefix, rank, size);
  };
  spec.after_wait = [gpu] { device::synchronize(gpu); };
  spec.poll_completion = true;
  spec.capturing = [gpu] { return device::capturing(gpu); };
  spec.close = [pg](bool clean) { compat::nccl_close(*pg, clean); };
  spec.staging = gpu;
  spec.flat = {Collective::kAllgather, Collective::kReduceScatter};
  spec.group_p2p = compat::has_coalescing();
  spec.uneven_lists = true;
  return make_c10d_communicator(std::move(spec));
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const launch::World& world,
                                                     const CommOptions& opts) {
  return make_nccl(world, opts, Group{});
}

std::unique_ptr<Communicator> make_nccl_group_communicator(const launch::World& world,
                                                           const CommOptions& opts,
                                                           const Group& group) {
  DTBENCH_CHECK(group.store && group.rank >= 0 && group.rank < group.size, "nccl: bad group");
  return make_nccl(world, opts, group);
}

}  // namespace dtbench::comm
