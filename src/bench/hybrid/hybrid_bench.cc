#include "bench/hybrid/hybrid_bench.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>

#include <fmt/format.h>
#include <torch/torch.h>

#include "bench/hybrid/embedding_server.h"
#include "bench/ps/directory.h"
#include "comm/communicator.h"
#include "comm/store.h"
#include "comm/topology.h"
#include "core/allocator.h"
#include "core/error.h"
#include "device/device.h"
#include "device/memory.h"
#include "rpc/raw_echo.h"
#include "train/strategy.h"

namespace dtbench::bench::hybrid {
namespace {

using Clock = std::chrono::steady_clock;

// The binary update log a trainer leaves in the store for the master's
// reference: records of (table, n, rows[n], grads[n * dim]).
struct UpdateLog {
  std::string bytes;
  std::int64_t records = 0;
  void add(int table, const std::vector<std::int64_t>& rows, const std::vector<float>& grads) {
    const std::int64_t n = static_cast<std::int64_t>(rows.size());
    auto put = [&](const void* p, std::size_t len) { bytes.append(static_cast<const char*>(p), len); };
    const std::int64_t t = table;
    put(&t, sizeof t);
    put(&n, sizeof n);
    put(rows.data(), rows.size() * sizeof(std::int64_t));
    put(grads.data(), grads.size() * sizeof(float));
    ++records;
  }
};

std::vector<std::unique_ptr<rpc::Client>> connect_servers(rpc::Node& node, c10d::Store& store,
                                                          const HybridOptions& o, int my_rank,
                                                          std::chrono::milliseconds timeout) {
  std::vector<std::unique_ptr<rpc::Client>> out;
  for (int s = 0; s < o.servers; ++s) {
    const auto ep = ps::lookup(store, fmt::format("hy/server/{}", s), timeout);
    const auto url = rpc::pick_url(ep, o.transport);
    out.push_back(std::make_unique<rpc::Client>(
        node, url, fmt::format("parameter server {} (rank {}, {})", s, 1 + o.trainers + s, url),
        my_rank));
  }
  return out;
}

void bye_all(std::vector<std::unique_ptr<rpc::Client>>& clients) {
  for (auto& c : clients) {
    rpc::Header h;
    h.op = kBye;
    c->request(h);
  }
  for (auto& c : clients) c->close();
}

void serve(const launch::World& world, const HybridOptions& o, c10d::Store& store) {
  const int index = server_of_rank(o, world.rank);
  rpc::Node node(o.transport, fmt::format("parameter server {} (rank {})", index, world.rank));
  rpc::Server server(node);
  EmbeddingServer service(o, index, server);
  std::unique_ptr<rpc::RawEchoServer> raw;
  if (o.ceiling_iters > 0) {  // every server echoes: the ceiling runs at the run's concurrency
    raw = std::make_unique<rpc::RawEchoServer>(node);
    ps::publish(store, fmt::format("hy/raw/{}", index), raw->endpoint());
  }
  server.start(&service);
  ps::publish(store, fmt::format("hy/server/{}", index), server.endpoint());
  const auto error = server.wait(o.transport.timeout);
  server.stop();
  if (raw) raw->stop();
  node.close();
  if (!error.empty()) throw CommError(error);
}

// --------------------------------------------------------------- trainer

void train(const launch::World& world, const HybridOptions& o, const comm::CommOptions& comm_opts,
           c10::intrusive_ptr<c10d::Store> store, HybridRunResult& result) {
  const int t = world.rank - 1;
  const int dim = o.embedding_dim;
  auto comm = comm::make_group_communicator(world, comm_opts, {store, "dtbench/hybrid", t, o.trainers});
  torch::manual_seed(o.seed * 1000 + static_cast<std::uint64_t>(t));
  // The trainer's tensor bytes (device/memory.h), counted from before the FC
  // stack is made.
  const c10::Device dev = o.device == "cuda"
                              ? device::select("cuda", t % std::max(1, device::cuda_device_count()))
                              : c10::Device(c10::DeviceType::CPU);
  auto memory = device::make_memory_meter(dev);
  bool rss_reset = false;
  torch::nn::Sequential fc(torch::nn::Linear(o.tables * dim, o.hidden), torch::nn::ReLU(),
                           torch::nn::Linear(o.hidden, o.hidden), torch::nn::ReLU(),
                           torch::nn::Linear(o.hidden, 1));
  // --device cuda: the FC stack on a GPU (trainers share GPUs round-robin);
  // the host-side input is copied there, so its gradient comes back to host.
  fc->to(dev);
  train::TrainOptions topts;
  topts.reducer = "ddp";
  topts.lr = o.lr;
  auto reducer = train::make_strategy(topts, *fc.ptr(), comm.get());
  torch::optim::SGD opt(fc->parameters(), torch::optim::SGDOptions(o.lr));

  rpc::Node node(o.transport, fmt::format("trainer {} (rank {})", t, world.rank));
  auto clients = connect_servers(node, *store, o, world.rank, comm_opts.timeout);

  // Raw TensorPipe round trips of the same messages as one batch's lookups:
  // each round sends every server `tables` messages of the rows one server
  // returns and ends when all echoes are back. Measured twice: trainer 0
  // alone (the others wait), then every trainer at once after a barrier.
  // The run's lookups lie between: trainers iterate at once, but each spends
  // only part of its iteration looking up.
  if (o.ceiling_iters > 0) {
    const std::size_t rows = static_cast<std::size_t>((o.batch_size + o.servers - 1) / o.servers);
    result.ceiling_bytes = rows * dim * sizeof(float);
    std::vector<rpc::EchoTarget> targets;
    for (int s = 0; s < o.servers; ++s)
      targets.push_back({rpc::pick_url(ps::lookup(*store, fmt::format("hy/raw/{}", s), comm_opts.timeout),
                                       o.transport),
                         std::vector<std::size_t>(o.tables, result.ceiling_bytes)});
    if (t == 0) result.ceiling_alone_seconds = rpc::raw_echo_rounds(node, targets, o.ceiling_iters, 5);
    comm::store_barrier(*store, "hy/ceiling-start", o.trainers, comm_opts.timeout);
    result.ceiling_seconds = rpc::raw_echo_rounds(node, targets, o.ceiling_iters, 5);
  }
  comm::store_barrier(*store, "hy/ready", 1 + o.trainers, comm_opts.timeout);

  report::HybridTrainerRun run;
  run.trainer = t;
  UpdateLog log;
  const int P = o.servers;
  for (int it = 0; it < o.warmup + o.iters; ++it) {
    if (it == o.warmup) {
      memory->reset_peak();
      rss_reset = alloc::reset_peak_rss();
    }
    // The batch: rows per table, grouped by server (untimed).
    std::mt19937_64 rng(o.seed * 7919 + static_cast<std::uint64_t>(t) * 104729 + static_cast<std::uint64_t>(it));
    std::uniform_int_distribution<std::int64_t> pick(0, o.num_embeddings - 1);
    // rows[table][server] and where each lands in the batch
    std::vector<std::vector<std::vector<std::int64_t>>> rows(o.tables, std::vector<std::vector<std::int64_t>>(P));
    std::vector<std::vector<std::vector<int>>> slot(o.tables, std::vector<std::vector<int>>(P));
    for (int tb = 0; tb < o.tables; ++tb)
      for (int b = 0; b < o.batch_size; ++b) {
        const auto r = pick(rng);
        const int s = server_of_row(o, r);
        rows[tb][s].push_back(r);
        slot[tb][s].push_back(b);
      }
    auto target = torch::rand({o.batch_size, 1});
    std::vector<std::vector<std::vector<float>>> got(o.tables, std::vector<std::vector<float>>(P));

    const auto t0 = Clock::now();
    std::vector<std::shared_ptr<rpc::Call>> calls;
    for (int tb = 0; tb < o.tables; ++tb)
      for (int s = 0; s < P; ++s) {
        if (rows[tb][s].empty()) continue;
        got[tb][s].resize(rows[tb][s].size() * dim);
        rpc::Header h;
        h.op = kLookup;
        h.key = static_cast<std::uint64_t>(tb);
        calls.push_back(clients[s]->call(
            h, {{rows[tb][s].data(), rows[tb][s].size() * sizeof(std::int64_t)}},
            {{got[tb][s].data(), got[tb][s].size() * sizeof(float)}}));
      }
    for (auto& c : calls) c->wait();
    const auto t_lookup = Clock::now();

    auto input = torch::empty({o.batch_size, o.tables * dim});
    auto acc = input.accessor<float, 2>();
    for (int tb = 0; tb < o.tables; ++tb)
      for (int s = 0; s < P; ++s)
        for (std::size_t k = 0; k < slot[tb][s].size(); ++k)
          for (int c = 0; c < dim; ++c) acc[slot[tb][s][k]][tb * dim + c] = got[tb][s][k * dim + c];
    input.set_requires_grad(true);

    opt.zero_grad();
    reducer->before_forward();
    auto loss = torch::mse_loss(fc->forward(input.to(dev)), target.to(dev));
    reducer->before_backward(loss);
    loss.backward();
    reducer->finish_backward();
    opt.step();

    // Sparse gradients: coalesce repeated rows, one update per (table, server).
    auto grad = input.grad().contiguous();
    auto gacc = grad.accessor<float, 2>();
    std::vector<std::vector<std::int64_t>> up_rows;
    std::vector<std::vector<float>> up_grads;
    std::vector<std::pair<int, int>> up_dest;
    for (int tb = 0; tb < o.tables; ++tb)
      for (int s = 0; s < P; ++s) {
        if (rows[tb][s].empty()) continue;
        std::map<std::int64_t, std::size_t> index;
        std::vector<std::int64_t> ur;
        std::vector<float> ug;
        for (std::size_t k = 0; k < rows[tb][s].size(); ++k) {
          auto [pos, fresh] = index.emplace(rows[tb][s][k], ur.size());
          if (fresh) {
            ur.push_back(rows[tb][s][k]);
            ug.resize(ug.size() + dim, 0.0f);
          }
          for (int c = 0; c < dim; ++c) ug[pos->second * dim + c] += gacc[slot[tb][s][k]][tb * dim + c];
        }
        up_rows.push_back(std::move(ur));
        up_grads.push_back(std::move(ug));
        up_dest.emplace_back(tb, s);
      }
    calls.clear();
    for (std::size_t u = 0; u < up_rows.size(); ++u) {
      rpc::Header h;
      h.op = kUpdate;
      h.key = static_cast<std::uint64_t>(up_dest[u].first);
      calls.push_back(clients[up_dest[u].second]->call(
          h,
          {{up_rows[u].data(), up_rows[u].size() * sizeof(std::int64_t)},
           {up_grads[u].data(), up_grads[u].size() * sizeof(float)}},
          {}));
    }
    for (auto& c : calls) c->wait();
    const auto t1 = Clock::now();
    if (o.check)
      for (std::size_t u = 0; u < up_rows.size(); ++u) log.add(up_dest[u].first, up_rows[u], up_grads[u]);
    store->add(comm::progress_key("hy/progress"), 1);  // the master's liveness signal
    if (it >= o.warmup) {
      run.iteration_seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
      run.lookup_seconds.push_back(std::chrono::duration<double>(t_lookup - t0).count());
    }
  }
  // Memory over the timed iterations, and the model state held: the FC
  // stack's parameters and gradients (SGD without momentum keeps no state).
  run.peak_bytes = memory->read().peak;
  run.peak_rss_bytes = rss_reset ? alloc::peak_rss_bytes() : -1;
  run.model_state_bytes = 0;
  for (const auto& p : fc->parameters()) {
    run.model_state_bytes += static_cast<std::int64_t>(p.nbytes());
    if (p.grad().defined()) run.model_state_bytes += static_cast<std::int64_t>(p.grad().nbytes());
  }
  // Results, update log and FC parameters for the master.
  ps::put_text(*store, fmt::format("hy/result/{}", t), report::to_json(run).dump());
  if (o.check) {
    ps::put_text(*store, fmt::format("hy/log/{}", t), log.bytes);
    std::vector<float> flat;
    for (const auto& p : fc->parameters()) {
      auto c = p.detach().to(at::kCPU).contiguous();
      flat.insert(flat.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    }
    ps::put_text(*store, fmt::format("hy/fc/{}", t),
                 std::string(reinterpret_cast<const char*>(flat.data()), flat.size() * sizeof(float)));
  }
  comm::store_barrier(*store, "hy/done", 1 + o.trainers, comm_opts.timeout, "hy/progress");
  bye_all(clients);
  node.close();
  comm->barrier();
}

// --------------------------------------------------------------- master

std::string wait_get(c10d::Store& store, const std::string& key, std::chrono::milliseconds timeout) {
  return ps::wait_text(store, key, timeout, "hybrid master");
}

void master(const launch::World& world, const HybridOptions& o, const comm::CommOptions& comm_opts,
            c10d::Store& store, HybridRunResult& result) {
  rpc::Node node(o.transport, "master (rank 0)");
  auto clients = connect_servers(node, store, o, 0, comm_opts.timeout);
  for (auto& c : clients) {
    rpc::Header h;
    h.op = kInit;
    c->request(h);
  }
  comm::store_barrier(store, "hy/ready", 1 + o.trainers, comm_opts.timeout);
  // Trainers run as long as they keep making progress: the master fails only
  // when no trainer finished an iteration for a whole timeout.
  comm::store_barrier(store, "hy/done", 1 + o.trainers, comm_opts.timeout, "hy/progress");
  for (int t = 0; t < o.trainers; ++t) {
    const auto b = wait_get(store, fmt::format("hy/result/{}", t), comm_opts.timeout);
    result.trainers.push_back(report::hybrid_trainer_from_json(nlohmann::json::parse(b)));
  }
  if (!o.check) return bye_all(clients);

  // The servers' tables, reassembled.
  const int dim = o.embedding_dim;
  std::vector<std::vector<float>> tables(o.tables, std::vector<float>(o.num_embeddings * dim));
  for (int tb = 0; tb < o.tables; ++tb)
    for (int s = 0; s < o.servers; ++s) {
      std::vector<float> shard(static_cast<std::size_t>(rows_on(o, s)) * dim);
      rpc::Header h;
      h.op = kDump;
      h.key = static_cast<std::uint64_t>(tb);
      clients[s]->request(h, {}, {{shard.data(), shard.size() * sizeof(float)}});
      for (std::int64_t lr = 0; lr < rows_on(o, s); ++lr)
        std::memcpy(&tables[tb][(lr * o.servers + s) * dim], &shard[lr * dim], dim * sizeof(float));
    }
  bye_all(clients);
  node.close();

  // The reference: initial tables plus every logged update, trainer by trainer.
  std::vector<std::vector<float>> ref(o.tables, std::vector<float>(o.num_embeddings * dim));
  for (int tb = 0; tb < o.tables; ++tb)
    for (std::int64_t r = 0; r < o.num_embeddings; ++r)
      for (int c = 0; c < dim; ++c) ref[tb][r * dim + c] = initial_value(o.seed, tb, r, c);
  std::vector<int> touches(o.tables * o.num_embeddings, 0);
  for (int t = 0; t < o.trainers; ++t) {
    const auto b = wait_get(store, fmt::format("hy/log/{}", t), comm_opts.timeout);
    std::size_t pos = 0;
    auto read = [&](void* dst, std::size_t n) {
      if (pos + n > b.size()) throw CommError(fmt::format("hybrid: trainer {}'s update log is truncated", t));
      std::memcpy(dst, b.data() + pos, n);
      pos += n;
    };
    while (pos < b.size()) {
      std::int64_t tb = 0, n = 0;
      read(&tb, sizeof tb);
      read(&n, sizeof n);
      std::vector<std::int64_t> rows(n);
      std::vector<float> g(n * dim);
      read(rows.data(), n * sizeof(std::int64_t));
      read(g.data(), g.size() * sizeof(float));
      for (std::int64_t i = 0; i < n; ++i) {
        ++touches[tb * o.num_embeddings + rows[i]];
        for (int c = 0; c < dim; ++c) ref[tb][rows[i] * dim + c] -= o.lr * g[i * dim + c];
      }
      ++result.updates_logged;
    }
  }
  // Updates to one row from different trainers commute only up to float
  // rounding: allow a few ulps of the values per update applied.
  double max_diff = 0, tol = 0;
  for (int tb = 0; tb < o.tables; ++tb)
    for (std::int64_t r = 0; r < o.num_embeddings; ++r)
      for (int c = 0; c < dim; ++c) {
        const double d = std::fabs(tables[tb][r * dim + c] - ref[tb][r * dim + c]);
        const double allowed = 4e-7 * (1 + touches[tb * o.num_embeddings + r]) * (1 + std::fabs(ref[tb][r * dim + c]));
        max_diff = std::max(max_diff, d);
        tol = std::max(tol, allowed);
        if (d > allowed)
          throw VerificationError(fmt::format(
              "hybrid: table {} row {} column {} is {:.9g} on the servers but {:.9g} in the "
              "single-process reference (|diff| {:.3g} > {:.3g})",
              tb, r, c, tables[tb][r * dim + c], ref[tb][r * dim + c], d, allowed));
      }
  result.checked = true;
  result.max_table_diff = max_diff;
  result.tolerance = tol;
  // FC replicas must be identical on every trainer.
  const auto first = wait_get(store, "hy/fc/0", comm_opts.timeout);
  for (int t = 1; t < o.trainers; ++t)
    if (wait_get(store, fmt::format("hy/fc/{}", t), comm_opts.timeout) != first)
      throw VerificationError(fmt::format("hybrid: trainer {}'s FC parameters differ from trainer 0's", t));
  result.fc_replicas_identical = true;
}

}  // namespace

HybridRunResult run_hybrid(const launch::World& world, const HybridOptions& o,
                           const comm::CommOptions& comm_opts) {
  validate(o);
  if (world.world_size != world_size_for(o))
    throw UsageError(fmt::format("hybrid: 1 master + {} trainer(s) + {} server(s) need {} ranks, but the job has {}",
                                 o.trainers, o.servers, world_size_for(o), world.world_size));
  HybridRunResult result;
  result.transport = rpc::describe(o.transport);
  auto store = comm::connect_store(world, comm_opts.timeout);
  // A request or barrier that fails because a rank stopped or died names it,
  // from what its launcher published in the store (as the collectives do).
  try {
    return [&]() -> HybridRunResult {
      result.topology = comm::gather_topology(*store, world.rank, world.world_size, comm_opts.timeout);
      if (world.rank == 0) {
        master(world, o, comm_opts, *store, result);
        result.leader = true;
        // Every trainer's ceiling rounds travel through the store.
        if (o.ceiling_iters > 0)
          for (int t = 0; t < o.trainers; ++t) {
            const auto j = nlohmann::json::parse(wait_get(*store, fmt::format("hy/ceiling/{}", t), comm_opts.timeout));
            for (double s : j.at("seconds")) result.ceiling_seconds.push_back(s);
            if (t == 0) result.ceiling_alone_seconds = j.at("alone_seconds").get<std::vector<double>>();
            result.ceiling_bytes = j.at("bytes").get<std::size_t>();
          }
      } else if (is_trainer_rank(o, world.rank)) {
        train(world, o, comm_opts, store, result);
        if (o.ceiling_iters > 0) {
          const auto s = nlohmann::json({{"seconds", result.ceiling_seconds},
                                         {"alone_seconds", result.ceiling_alone_seconds},
                                         {"bytes", result.ceiling_bytes}})
                             .dump();
          ps::put_text(*store, fmt::format("hy/ceiling/{}", world.rank - 1), s);
        }
      } else {
        serve(world, o, *store);
      }
      comm::store_final_barrier(*store, "hy/end", world.world_size, comm_opts.timeout, world.rank == 0);
      return result;
    }();
  } catch (...) {
    std::rethrow_exception(comm::with_failure_cause(std::current_exception(), store));
  }
}

}  // namespace dtbench::bench::hybrid
