#include "comm/gloo/gloo_communicator.h"

#include <fmt/format.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "comm/c10d/c10d_communicator.h"
#include "comm/error_text.h"
#include "comm/store.h"
#include "compat/c10d_compat.h"
#include "core/error.h"
#include "core/net_route.h"

namespace dtbench::comm {
namespace {

// What this LibTorch's ProcessGroupGloo refuses (compat::gloo_limits).
std::string gloo_unsupported(Collective c, DType dtype, ReduceOp op) {
  const auto limits = compat::gloo_limits();
  if (is_float8(dtype))
    return fmt::format("gloo: ProcessGroupGloo has no {} (no float8 type: \"Invalid scalar type\"); NCCL has them "
                       "(--backend nccl)",
                       to_string(dtype));
  if (dtype == DType::kBool && *compat::gloo_bool_reason() != '\0') return compat::gloo_bool_reason();
  if (dtype == DType::kBool && is_reduction(c) && op == ReduceOp::kAvg) return bool_avg_reason("gloo");
  if (dtype == DType::kBFloat16 && !limits.bfloat16) return limits.why_bfloat16;
  if (is_reduction(c) && op == ReduceOp::kAvg && !limits.avg) return limits.why_avg;
  if (is_reduction(c) && op == ReduceOp::kAvg && !limits.avg_integers &&
      is_integer(dtype))
    return limits.why_avg_integers;
  if (c == Collective::kReduceScatter && !limits.reduce_scatter) return limits.why_reduce_scatter;
  return "";
}

std::shared_ptr<::gloo::transport::Device> gloo_device(const launch::World& world,
                                                       const CommOptions& opts) {
  try {
    if (!opts.iface.empty()) return compat::gloo_device_for_interface(opts.iface);
    if (launch::is_loopback(world.master_addr)) return compat::gloo_device_for_hostname("127.0.0.1");
    // The address this host uses toward the master: the interface that
    // routes there, not whatever the host name resolves to.
    return compat::gloo_device_for_hostname(net::route_to(world.master_addr).local_addr);
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("gloo: cannot use interface '{}': {}",
                                 opts.iface.empty() ? "default" : opts.iface, one_line(e)));
  }
}

// group.store null: the whole job, through a store of its own.
std::unique_ptr<Communicator> make_gloo(const launch::World& world, const CommOptions& opts,
                                   const Group& group) {
  auto rdv = c10d_rendezvous("gloo", world, opts, group);
  C10dBackendSpec& spec = rdv.spec;
  const c10::intrusive_ptr<c10d::Store> prefix = rdv.prefix;
  auto pg_opts = c10d::ProcessGroupGloo::Options::create(opts.timeout);
  pg_opts->devices.push_back(gloo_device(world, opts));
  pg_opts->threads = opts.gloo_threads;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
  try {
    pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefix, spec.rank, spec.size, pg_opts);
  } catch (const std::exception& e) {
    throw CommError(fmt::format(
        "gloo: rank {} could not connect to its peers within {} ms (is a rank missing or "
        "unreachable?): {}",
        spec.rank, opts.timeout.count(), one_line(e)));
  }
  spec.backend = pg;
  spec.unsupported = gloo_unsupported;
  spec.composite = [](Collective c) {
    if (c == Collective::kAllgatherv)
      return std::string("gloo: a broadcast from each rank of its part (ProcessGroupGloo's allgather takes equal "
                         "parts only)");
    if (c == Collective::kReduceScatterV)
      return std::string("gloo: an allreduce of a copy of the whole input, each rank keeping its part "
                         "(ProcessGroupGloo has no uneven reduce_scatter); the copy is in the time");
    return std::string(c == Collective::kReduceScatter ? compat::gloo_limits().reduce_scatter_composite : "");
  };
  // ProcessGroupGloo reduces, broadcasts and gathers CUDA tensors itself
  // (through pinned host copies); the rest dtbench stages through the host.
  spec.host_only = {Collective::kSendrecv, Collective::kReduceScatter, Collective::kAlltoall, Collective::kAlltoallv,
                    Collective::kPingpong};
  if (compat::gloo_has_flat_collectives()) {
    spec.flat = {Collective::kAllgather, Collective::kReduceScatter};
    spec.flat_host_only = true;  // device tensors keep the list form, which gloo stages itself
  }
  spec.make_group = [pg, prefix, rank = spec.rank, size = spec.size] {
    return compat::gloo_process_group(pg, prefix, rank, size);
  };
  return make_c10d_communicator(std::move(spec));
}

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(const launch::World& world,
                                                     const CommOptions& opts) {
  return make_gloo(world, opts, Group{});
}

std::unique_ptr<Communicator> make_gloo_group_communicator(const launch::World& world,
                                                           const CommOptions& opts,
                                                           const Group& group) {
  DTBENCH_CHECK(group.store && group.rank >= 0 && group.rank < group.size, "gloo: bad group");
  return make_gloo(world, opts, group);
}

}  // namespace dtbench::comm
