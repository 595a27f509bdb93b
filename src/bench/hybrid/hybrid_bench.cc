#include "bench/hybrid/hybrid_bench.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <random>

#include <fmt/format.h>
#include <torch/torch.h>

#include "bench/hybrid/embedding_server.h"
#include "bench/hybrid/hybrid_check.h"
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

// The FC stack of the original: Linear to 256, 128, ReLU, 64, 32, 8.
torch::nn::Sequential make_fc(int in) {
  torch::nn::Sequential fc;
  int width = in;
  for (std::size_t i = 0; i < std::size(kFcWidths); ++i) {
    fc->push_back(torch::nn::Linear(width, kFcWidths[i]));
    if (i == 1) fc->push_back(torch::nn::ReLU());
    width = kFcWidths[i];
  }
  return fc;
}

std::string sums_bytes(const std::vector<LookupSum>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(LookupSum));
}

void train(const launch::World& world, const HybridOptions& o, const comm::CommOptions& comm_opts,
           c10::intrusive_ptr<c10d::Store> store, HybridRunResult& result) {
  const int t = world.rank - 1;
  const int dim = o.embedding_dim;
  const int P = o.servers;
  auto comm = comm::make_group_communicator(world, comm_opts, {store, "dtbench/hybrid", t, o.trainers});
  torch::manual_seed(o.seed * 1000 + static_cast<std::uint64_t>(t));
  // The trainer's tensor bytes (device/memory.h), counted from before the FC
  // stack is made.
  const c10::Device dev = o.device == "cuda"
                              ? device::select("cuda", t % std::max(1, device::cuda_device_count()))
                              : c10::Device(c10::DeviceType::CPU);
  auto memory = device::make_memory_meter(dev);
  bool rss_reset = false;
  auto fc = make_fc(P * dim);
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
  const bool sequential = o.lookup == "sequential";

  // Raw TensorPipe rounds of messages the size of one lookup's reply (a
  // batch's mean bags x dim floats) with every server, in the run's order
  // (one server after another, or all at once). Measured twice: trainer 0
  // alone (the others wait), then every trainer at once after a barrier.
  if (o.ceiling_iters > 0) {
    result.ceiling_bytes = static_cast<std::size_t>(kMeanBags) * dim * sizeof(float);
    std::vector<rpc::EchoTarget> targets;
    for (int s = 0; s < P; ++s)
      targets.push_back({rpc::pick_url(ps::lookup(*store, fmt::format("hy/raw/{}", s), comm_opts.timeout),
                                       o.transport),
                         {result.ceiling_bytes}});
    if (t == 0) result.ceiling_alone_seconds = rpc::raw_echo_rounds(node, targets, o.ceiling_iters, 5, sequential);
    comm::store_barrier(*store, "hy/ceiling-start", o.trainers, comm_opts.timeout);
    result.ceiling_seconds = rpc::raw_echo_rounds(node, targets, o.ceiling_iters, 5, sequential);
  }
  comm::store_barrier(*store, "hy/ready", 1 + o.trainers, comm_opts.timeout);

  report::HybridTrainerRun run;
  run.trainer = t;
  const std::int64_t total_batches = static_cast<std::int64_t>(o.warmup + o.epochs) * o.batches;
  std::vector<LookupSum> sums;  // [batch * P + server]
  if (o.check) sums.resize(static_cast<std::size_t>(total_batches) * P);
  std::mt19937_64 rng(o.seed * 7919 + static_cast<std::uint64_t>(t) * 104729);
  std::vector<std::vector<float>> got(P), grads(P);
  std::vector<std::shared_ptr<rpc::Call>> calls;
  auto wait_all = [&] {
    for (auto& c : calls) c->wait();
    calls.clear();
  };
  for (int epoch = 0; epoch < o.warmup + o.epochs; ++epoch) {
    if (epoch == o.warmup) {
      memory->reset_peak();
      rss_reset = alloc::reset_peak_rss();
    }
    const bool timed = epoch >= o.warmup;
    const auto t0 = Clock::now();
    std::int64_t bags_in_epoch = 0;
    for (int b = 0; b < o.batches; ++b) {
      const std::int64_t seq = static_cast<std::int64_t>(epoch) * o.batches + b;
      auto batch = make_batch(rng, o.num_embeddings);
      const auto bags = static_cast<std::int64_t>(batch.bags());
      bags_in_epoch += bags;
      const std::vector<rpc::Buffer> bag_parts{
          {batch.indices.data(), batch.indices.size() * sizeof(std::int64_t)},
          {batch.offsets.data(), batch.offsets.size() * sizeof(std::int64_t)}};
      // Forward: every server pools the same bags from its table.
      const auto tl = Clock::now();
      for (int s = 0; s < P; ++s) {
        got[s].resize(static_cast<std::size_t>(bags) * dim);
        rpc::Header h;
        h.op = kLookup;
        h.arg0 = seq;
        calls.push_back(clients[s]->call(h, bag_parts, {{got[s].data(), got[s].size() * sizeof(float)}}));
        if (sequential) wait_all();
      }
      wait_all();
      if (timed) run.lookup_seconds.push_back(std::chrono::duration<double>(Clock::now() - tl).count());
      auto input = torch::empty({bags, P * dim});
      for (int s = 0; s < P; ++s)
        input.narrow(1, s * dim, dim).copy_(torch::from_blob(got[s].data(), {bags, dim}));
      input.set_requires_grad(true);
      // The distributed backward: as soon as autograd has the input's
      // gradient, each server's slice goes to it (all at once), while the
      // Reducer may still wait on its last allreduce (distributed autograd
      // sends from inside the backward as well). Then the optimizer steps
      // every server and the FC stack.
      input.register_hook([&](const at::Tensor& g) {
        const auto host = g.to(at::kCPU);
        for (int s = 0; s < P; ++s) {
          grads[s].resize(static_cast<std::size_t>(bags) * dim);
          torch::from_blob(grads[s].data(), {bags, dim}).copy_(host.narrow(1, s * dim, dim));
          rpc::Header h;
          h.op = kBackward;
          h.arg0 = seq;
          auto parts = bag_parts;
          parts.push_back({grads[s].data(), grads[s].size() * sizeof(float)});
          calls.push_back(clients[s]->call(h, parts, {}));
        }
      });
      auto target = torch::from_blob(batch.targets.data(), {bags}, torch::kLong);

      opt.zero_grad();
      reducer->before_forward();
      auto loss = torch::nn::functional::cross_entropy(fc->forward(input.to(dev)), target.to(dev));
      reducer->before_backward(loss);
      loss.backward();
      reducer->finish_backward();
      if (static_cast<int>(calls.size()) != P)
        throw CommError(fmt::format("hybrid: trainer {}: the backward sent {} of {} gradients", t, calls.size(), P));
      wait_all();
      for (int s = 0; s < P; ++s) {
        rpc::Header h;
        h.op = kStep;
        h.arg0 = seq;
        calls.push_back(clients[s]->call(h, {}, {}));
      }
      opt.step();
      wait_all();
      if (o.check)
        for (int s = 0; s < P; ++s) sums[static_cast<std::size_t>(seq) * P + s] = lookup_sum(got[s].data(), got[s].size());
    }
    if (timed) {
      run.epoch_seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      run.last_epoch_bags = bags_in_epoch;
    }
    store->add(comm::progress_key("hy/progress"), 1);  // the master's liveness signal, untimed
  }
  // Memory over the timed epochs, and the model state held: the FC stack's
  // parameters and gradients (SGD without momentum keeps no state).
  run.peak_bytes = memory->read().peak;
  run.peak_rss_bytes = rss_reset ? alloc::peak_rss_bytes() : -1;
  run.model_state_bytes = 0;
  for (const auto& p : fc->parameters()) {
    run.model_state_bytes += static_cast<std::int64_t>(p.nbytes());
    if (p.grad().defined()) run.model_state_bytes += static_cast<std::int64_t>(p.grad().nbytes());
  }
  // Results, lookup fingerprints and FC parameters for the master.
  ps::put_text(*store, fmt::format("hy/result/{}", t), report::to_json(run).dump());
  if (o.check) {
    ps::put_text(*store, fmt::format("hy/sums/{}", t), sums_bytes(sums));
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
  // when no trainer finished a batch for a whole timeout.
  comm::store_barrier(store, "hy/done", 1 + o.trainers, comm_opts.timeout, "hy/progress");
  for (int t = 0; t < o.trainers; ++t) {
    const auto b = wait_get(store, fmt::format("hy/result/{}", t), comm_opts.timeout);
    result.trainers.push_back(report::hybrid_trainer_from_json(nlohmann::json::parse(b)));
  }
  if (!o.check) return bye_all(clients);

  // Every server's final table and event log.
  std::vector<std::vector<float>> tables(o.servers);
  std::vector<std::string> logs(o.servers);
  for (int s = 0; s < o.servers; ++s) {
    rpc::Header h;
    h.op = kDump;
    tables[s].resize(static_cast<std::size_t>(o.num_embeddings) * o.embedding_dim);
    clients[s]->request(h, {}, {{tables[s].data(), tables[s].size() * sizeof(float)}});
    std::uint64_t size = 0;
    h.op = kLogSize;
    clients[s]->request(h, {}, {{&size, sizeof size}});
    logs[s].resize(size);
    h.op = kLog;
    clients[s]->request(h, {}, {{logs[s].data(), logs[s].size()}});
  }
  bye_all(clients);
  node.close();

  const std::int64_t batches = static_cast<std::int64_t>(o.warmup + o.epochs) * o.batches;
  std::vector<std::vector<LookupSum>> sums(o.trainers);
  for (int t = 0; t < o.trainers; ++t) {
    const auto b = wait_get(store, fmt::format("hy/sums/{}", t), comm_opts.timeout);
    if (b.size() != static_cast<std::size_t>(batches) * o.servers * sizeof(LookupSum))
      throw CommError(fmt::format("hybrid: trainer {}'s lookup fingerprints are {} bytes, not {}", t, b.size(),
                                  static_cast<std::size_t>(batches) * o.servers * sizeof(LookupSum)));
    sums[t].resize(static_cast<std::size_t>(batches) * o.servers);
    std::memcpy(sums[t].data(), b.data(), b.size());
  }
  result.max_table_diff = 0;
  for (int s = 0; s < o.servers; ++s) {
    const auto r = replay_server(o, s, logs[s], sums, batches, tables[s]);
    result.lookups_checked += r.lookups;
    result.steps_checked += r.steps;
    result.max_table_diff = std::max(result.max_table_diff, r.max_table_diff);
    result.tolerance = std::max(result.tolerance, r.tolerance);
  }
  result.checked = true;
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
