#include "bench/kvstore/kvstore_bench.h"

#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ATen/ATen.h>

#include "bench/kvstore/kv_worker.h"
#include "bench/kvstore/kv_tensor_worker.h"
#include "bench/ps/directory.h"
#include "comm/communicator.h"
#include "comm/store.h"
#include "comm/topology.h"
#include "core/error.h"
#include "core/log.h"
#include "device/device.h"
#include "rpc/raw_echo.h"

namespace dtbench::bench::kv {
namespace {

KvServerStats stats_from(const nlohmann::json& j) {
  KvServerStats s;
  s.pushes = j.at("pushes");
  s.pulls = j.at("pulls");
  s.bytes_in = j.at("bytes_in");
  s.bytes_out = j.at("bytes_out");
  s.keys = j.at("keys");
  return s;
}

void serve(const launch::World& world, const KvOptions& o, const KvLayout& layout,
           c10d::Store& store) {
  const int index = world.rank - o.workers;
  rpc::Node node(o.transport, fmt::format("kvstore server {} (rank {})", index, world.rank));
  rpc::Server server(node);
  KvServer service(o, layout, index, server);
  std::unique_ptr<rpc::RawEchoServer> raw;
  if (o.ceiling_iters > 0) {  // every server echoes: the ceiling runs at the run's concurrency
    raw = std::make_unique<rpc::RawEchoServer>(node);
    ps::publish(store, fmt::format("kv/raw/{}", index), raw->endpoint());
  }
  server.start(&service);
  ps::publish(store, fmt::format("kv/server/{}", index), server.endpoint());
  const std::string error = server.wait(o.transport.timeout);
  server.stop();
  if (raw) raw->stop();
  node.close();
  if (!error.empty()) throw CommError(error);
  const auto st = service.stats();
  nlohmann::json j = {{"pushes", st.pushes}, {"pulls", st.pulls}, {"bytes_in", st.bytes_in},
                      {"bytes_out", st.bytes_out}, {"keys", st.keys}};
  ps::put_text(store, fmt::format("kv/stats/{}", index), j.dump());
}

}  // namespace

KvRunResult run_kvstore(const launch::World& world, const KvOptions& o,
                        const comm::CommOptions& comm_opts,
                        const std::function<void(const report::KvIteration&)>& on_iteration) {
  validate(o);
  if (world.world_size != world_size_for(o))
    throw UsageError(fmt::format(
        "kvstore: {} worker(s) + {} server(s) need {} ranks, but the job has {}", o.workers,
        is_dist(o.mode) ? o.servers : 0, world_size_for(o), world.world_size));
  KvRunResult result;
  result.layout = plan_layout(o.arrays, is_dist(o.mode) ? o.servers : 1, o.bigarray_bound);
  result.transport = is_dist(o.mode) ? rpc::describe(o.transport) : "";
  auto store = comm::connect_store(world, comm_opts.timeout);
  // A request or barrier that fails because a rank stopped or died names it,
  // from what its launcher published in the store (as the collectives do).
  try {
    return [&]() -> KvRunResult {
      result.topology = comm::gather_topology(*store, world.rank, world.world_size, comm_opts.timeout);

      if (is_server_rank(o, world.rank)) {
        serve(world, o, result.layout, *store);
        comm::store_final_barrier(*store, "kv/end", world.world_size, comm_opts.timeout, world.rank == 0);
        return result;
      }

      const int w = world.rank;
      // --device cuda: replicas as tensors on this rank's GPU (local/device
      // modes); otherwise host vectors.
      std::unique_ptr<KvTensorWorker> gpu_worker;
      if (o.device == "cuda")
        gpu_worker = std::make_unique<KvTensorWorker>(o, result.layout, w, device::select("cuda", world.local_rank));
      std::optional<KvWorker> worker;  // host replicas (every dist mode is host-only)
      if (!gpu_worker) worker.emplace(o, result.layout, w);
      std::unique_ptr<rpc::Node> node;
      std::vector<std::unique_ptr<rpc::Client>> clients;
      std::unique_ptr<comm::Communicator> comm;
      if (is_dist(o.mode)) {
        node = std::make_unique<rpc::Node>(o.transport, fmt::format("kvstore worker {}", w));
        std::vector<rpc::Client*> raw_clients;
        for (int s = 0; s < o.servers; ++s) {
          const auto ep = ps::lookup(*store, fmt::format("kv/server/{}", s), comm_opts.timeout);
          const auto url = rpc::pick_url(ep, o.transport);
          clients.push_back(std::make_unique<rpc::Client>(
              *node, url, fmt::format("kvstore server {} (rank {}, {})", s, o.workers + s, url), w));
          raw_clients.push_back(clients.back().get());
        }
        worker->set_servers(raw_clients);
        // The ceiling at the run's concurrency: every worker at once sends
        // each server the keys it holds, as a push + pull would move them.
        if (o.ceiling_iters > 0) {
          std::vector<rpc::EchoTarget> targets(static_cast<std::size_t>(o.servers));
          for (int s = 0; s < o.servers; ++s)
            targets[s].url = rpc::pick_url(ps::lookup(*store, fmt::format("kv/raw/{}", s), comm_opts.timeout),
                                           o.transport);
          for (const auto& k : result.layout.keys) targets[k.server].sizes.push_back(k.numel * sizeof(float));
          comm::store_barrier(*store, "kv/ceiling", o.workers, comm_opts.timeout);
          const auto secs = rpc::raw_echo_rounds(*node, targets, o.ceiling_iters, 1);
          ps::put_text(*store, fmt::format("kv/ceiling/{}", w), nlohmann::json(secs).dump());
          result.ceiling_bytes = 2.0 * 4.0 * static_cast<double>(result.layout.total_numel);
        }
      } else if (o.mode == KvMode::kDevice) {
        comm = comm::make_group_communicator(world, comm_opts, {store, "dtbench/kv", w, o.workers});
        if (gpu_worker) gpu_worker->set_communicator(comm.get());
        if (worker) worker->set_allreduce([&](const std::vector<std::pair<float*, std::size_t>>& regions) {
          std::vector<comm::WorkPtr> works;
          for (const auto& [ptr, n] : regions) {
            auto t = at::from_blob(ptr, {static_cast<std::int64_t>(n)}, at::kFloat);
            works.push_back(comm->allreduce(t, t, comm::ReduceOp::kSum));
          }
          for (auto& wk : works) wk->wait(comm_opts.timeout);
        });
      }

      // Synchronous modes: every round starts at a barrier of the workers, so
      // one worker's untimed refill and check (a pass over all its data each)
      // never run inside another's timed round. The rounds are lockstep
      // anyway; dist_async keeps its workers free.
      if (o.workers > 1 && is_sync(o.mode)) {
        auto round_start = [&](std::int64_t round) {
          comm::store_barrier(*store, fmt::format("kv/round/{}", round), o.workers, comm_opts.timeout);
        };
        if (gpu_worker) gpu_worker->set_round_start(round_start);
        if (worker) worker->set_round_start(round_start);
      }
      comm::store_barrier(*store, "kv/start", o.workers, comm_opts.timeout);
      std::vector<report::KvIteration> mine;
      for (int i = 0; i < o.warmup + o.iters; ++i) {
        auto it = gpu_worker ? gpu_worker->run(i) : worker->run(i);
        if (i < o.warmup) continue;
        it.iter = i - o.warmup;
        if (!std::isnan(it.error) && it.error != 0)
          throw VerificationError(fmt::format(
              "kvstore {}: worker {} iteration {} differs from the exact result by up to {:g}",
              to_string(o.mode), w, it.iter + 1, it.error));
        if (w == 0 && on_iteration) on_iteration(it);
        mine.push_back(it);
      }
      if (o.mode == KvMode::kDistAsync) {
        comm::store_barrier(*store, "kv/pushed", o.workers, comm_opts.timeout);
        if (w == 0) {
          result.final_error = worker->final_error(o.warmup + o.iters);
          if (result.final_error != 0)
            throw VerificationError(fmt::format(
                "kvstore dist_async: the servers' final values differ from the exact total by up to {:g}",
                result.final_error));
        }
        comm::store_barrier(*store, "kv/checked", o.workers, comm_opts.timeout);
      }
      if (is_dist(o.mode)) {
        worker->bye();
        for (auto& c : clients) c->close();
        node->close();
      }
      nlohmann::ordered_json j = nlohmann::ordered_json::array();
      for (const auto& it : mine) j.push_back(report::to_json(it));
      ps::put_text(*store, fmt::format("kv/result/{}", w), j.dump());
      if (w == 0) {
        result.leader = true;
        for (int k = 0; k < o.workers; ++k) {
          const auto text =
              ps::wait_text(*store, fmt::format("kv/result/{}", k), comm_opts.timeout, "kvstore worker 0");
          std::vector<report::KvIteration> its;
          for (const auto& e : nlohmann::json::parse(text))
            its.push_back(report::kv_iteration_from_json(e));
          result.workers.push_back(std::move(its));
        }
        if (is_dist(o.mode) && o.ceiling_iters > 0)
          for (int k = 0; k < o.workers; ++k) {
            const auto text = ps::wait_text(*store, fmt::format("kv/ceiling/{}", k), comm_opts.timeout,
                                            "kvstore worker 0");
            for (double sec : nlohmann::json::parse(text)) result.ceiling_seconds.push_back(sec);
          }
        if (is_dist(o.mode))
          for (int s = 0; s < o.servers; ++s) {
            const auto text =
                ps::wait_text(*store, fmt::format("kv/stats/{}", s), comm_opts.timeout, "kvstore worker 0");
            result.servers.push_back(stats_from(nlohmann::json::parse(text)));
          }
      }
      comm::store_final_barrier(*store, "kv/end", world.world_size, comm_opts.timeout, world.rank == 0);
      return result;
    }();
  } catch (...) {
    std::rethrow_exception(comm::with_failure_cause(std::current_exception(), store));
  }
}

}  // namespace dtbench::bench::kv
