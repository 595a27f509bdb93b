// `dtbench hybrid`: PyTorch's DDP + RPC benchmark — embedding tables on
// parameter servers (dtbench's TensorPipe RPC), an FC stack under DDP.
// The command's flags; its run is hybrid_job (cli/jobs/hybrid.cc).
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/jobs.h"
#include "cli/run_options.h"
#include "core/error.h"
#include "rpc/transport.h"

namespace dtbench::cli {
namespace {

// What can be checked without LibTorch; the job checks the rest.
void check_hybrid(HybridFlags& f) {
  finish_run_options(f.run);
  auto& o = f.h;
  o.check = f.check != 0;
  o.transport.timeout = f.run.comm.timeout;
  bench::hybrid::validate(o);
  rpc::validate_names(o.transport);  // whether shm/cma can run here: the job
  if (f.run.comm.backend != "gloo")
    throw UsageError("hybrid: the trainers' DDP group runs c10d::Reducer on a gloo group (CPU or GPU "
                     "tensors); use --backend gloo");
}

}  // namespace

Action register_hybrid(CLI::App& app) {
  auto f = std::make_shared<HybridFlags>();
  auto* cmd = app.add_subcommand(
      "hybrid", "DDP + RPC: embedding tables on parameter servers, FC stack under DDP (PyTorch benchmark)");
  add_run_options(*cmd, f->run, /*with_nproc=*/false);
  auto& o = f->h;
  cmd->add_option("--device", o.device,
                  "Trainers' FC stack on: cpu, or cuda (trainer t on GPU t mod the GPUs visible)")
      ->capture_default_str();
  cmd->add_option("--trainers", o.trainers, "Trainer ranks (ranks 1..T)")->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--servers", o.servers, "Parameter-server ranks (ranks T+1..T+P), each holding one table")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--num-embeddings", o.num_embeddings, "Rows of each server's EmbeddingBag")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 34))->capture_default_str();
  cmd->add_option("--embedding-dim", o.embedding_dim, "Columns per row (the FC stack takes servers x dim)")
      ->check(CLI::Range(1, 65536))->capture_default_str();
  cmd->add_option("-n,--epochs", o.epochs, "Timed epochs")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("-w,--warmup", o.warmup, "Untimed epochs first")->check(CLI::Range(0, 1000000))->capture_default_str();
  cmd->add_option("--batches", o.batches, "Batches per epoch (20-50 indices in bags of 1-10 each)")
      ->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--lookup", o.lookup,
                  "sequential: one server after another, each lookup waited (the original); batched: every "
                  "server's lookup in flight at once")
      ->capture_default_str();
  cmd->add_option("--lr", o.lr, "SGD learning rate (tables and FC)")->check(CLI::Range(1e-9, 1e3))->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of tables and batches")->capture_default_str();
  cmd->add_option("-c,--check", f->check,
                  "Replay every server's events on PyTorch's EmbeddingBag: each lookup and the final tables (0/1)")
      ->check(CLI::Range(0, 1))->capture_default_str();
  cmd->add_option("--ceiling-iters", o.ceiling_iters, "Raw TensorPipe rounds (one lookup reply's size with every server) before the run, trainer 0 alone and every trainer at once (0 = skip)")
      ->check(CLI::Range(0, 1000000))->capture_default_str();
  cmd->add_option("--transport", o.transport.transport, "TensorPipe transport: auto, shm or uv")->capture_default_str();
  cmd->add_option("--channel", o.transport.channel, "TensorPipe channel: auto, cma or basic")->capture_default_str();
  return [f]() {
    check_hybrid(*f);
    return hybrid_job(*f);
  };
}

}  // namespace dtbench::cli
