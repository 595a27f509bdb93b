// `dtbench kvstore`: parameter-server push/pull bandwidth (MXNet's
// tools/bandwidth/measure.py), over dtbench's TensorPipe RPC.
// The command's flags; its run is kvstore_job (cli/jobs/kvstore.cc).
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "bench/kvstore/mxnet_resnet.h"
#include "cli/jobs.h"
#include "cli/run_options.h"
#include "core/error.h"
#include "core/units.h"
#include "rpc/transport.h"

namespace dtbench::cli {
namespace {

// What can be checked without LibTorch; the job checks the rest.
void check_kvstore(KvFlags& f) {
  finish_run_options(f.run);
  auto& o = f.kv;
  o.mode = bench::kv::parse_mode(f.mode);
  if (f.optimizer != "none" && f.optimizer != "sgd")
    throw UsageError(fmt::format("--optimizer '{}' must be none or sgd", f.optimizer));
  o.sgd = f.optimizer == "sgd";
  o.check = f.check != 0;
  o.bigarray_bound = static_cast<std::size_t>(f.bigarray);
  if (!bench::kv::is_dist(o.mode)) o.servers = 0;
  if (f.arrays > 0) {
    o.array_source = "uniform";
    o.arrays = bench::kv::uniform_arrays(f.arrays, parse_bytes(f.size, "--size"));
  } else if (!f.model.empty()) {
    // The model's arrays need LibTorch: the job makes and checks them.
  } else {
    if (f.network != "resnet")
      throw UsageError(fmt::format("--network '{}': the one network measure.py's arrays come from here is resnet",
                                   f.network));
    o.array_source = fmt::format("mxnet-resnet-{}", f.num_layers);
    o.arrays = bench::kv::mxnet_resnet_arrays(f.num_layers);
  }
  o.transport.timeout = f.run.comm.timeout;
  if (f.model.empty()) bench::kv::validate(o);
  rpc::validate_names(o.transport);  // whether shm/cma can run here: the job
  if (f.run.comm.backend == "nccl" && o.device != "cuda")
    throw UsageError("--backend nccl reduces GPU tensors: add --device cuda (with --mode device)");
  if (f.run.comm.backend == "mpi" && o.device == "cuda")
    throw UsageError("--backend mpi moves host buffers only; use --backend nccl or gloo with --device cuda");
}

}  // namespace

Action register_kvstore(CLI::App& app) {
  auto f = std::make_shared<KvFlags>();
  auto* cmd = app.add_subcommand(
      "kvstore", "Parameter-server push/pull bandwidth (MXNet kvstore tool): GB/s per worker, error");
  add_run_options(*cmd, f->run, /*with_nproc=*/false);
  cmd->add_option("--mode", f->mode, "local, device, dist_sync, dist_async or dist_device_sync")
      ->capture_default_str();
  cmd->add_option("--device", f->kv.device,
                  "Replicas on: cpu, or cuda (the GPU of each worker's LOCAL_RANK; modes local and device)")
      ->capture_default_str();
  cmd->add_option("--workers", f->kv.workers, "Worker ranks (ranks 0..W-1)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--servers", f->kv.servers, "Server ranks for the dist_* modes (ranks W..W+K-1)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--replicas", f->kv.replicas, "Gradient replicas per worker (stand-ins for GPUs)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  auto* network = cmd->add_option("--network", f->network,
                                  "measure.py's arrays: MXNet's ImageNet symbol of this network (resnet), "
                                  "its convolution and fully connected weights and biases")
                      ->capture_default_str();
  auto* layers = cmd->add_option("--num-layers", f->num_layers,
                                 "Depth of --network resnet: 18, 34, 50, 101, 152 (measure.py's default), 200 or 269")
                     ->capture_default_str();
  auto* model = cmd->add_option("--model", f->model,
                                "Instead of --network: arrays shaped like this dtbench model's parameters "
                                "(every one, batch norms included: resnet50 161 arrays)");
  model->excludes(network)->excludes(layers);
  cmd->add_option("--arrays", f->arrays, "Instead of --network/--model: this many arrays of --size bytes")
      ->check(CLI::Range(1, 100000))
      ->excludes(model)
      ->excludes(network)
      ->excludes(layers);
  cmd->add_option("--size", f->size, "Bytes per array with --arrays (e.g. 64M)")->capture_default_str();
  cmd->add_option("--bigarray-bound", f->bigarray,
                  "Arrays with at least this many elements are split over all servers")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--optimizer", f->optimizer, "none (servers return the sum) or sgd (servers update weights)")
      ->capture_default_str();
  cmd->add_option("-n,--iters", f->kv.iters, "Timed iterations")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("-w,--warmup", f->kv.warmup, "Untimed iterations first")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("-c,--check", f->check, "Check every result against the exact value (0/1)")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  cmd->add_flag("--separate-pull", f->kv.separate_pull,
               "dist_sync/dist_device_sync: acknowledge every push and pull each key separately (default: the "
               "last push of a key carries the pull, one request per key)");
  cmd->add_option("--ceiling-iters", f->kv.ceiling_iters,
                  "Rounds of the raw TensorPipe echo (every worker against every server at once) measured before the run (0 = skip)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--transport", f->kv.transport.transport,
                  "TensorPipe transport: auto (shm on one host, uv across), shm or uv")
      ->capture_default_str();
  cmd->add_option("--channel", f->kv.transport.channel,
                  "TensorPipe channel for large arrays: auto (cma, basic fallback), cma or basic")
      ->capture_default_str();
  return [f]() {
    check_kvstore(*f);
    return kvstore_job(*f);
  };
}

}  // namespace dtbench::cli
