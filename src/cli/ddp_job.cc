#include "cli/ddp_job.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "comm/factory.h"
#include "core/error.h"
#include "launch/launcher.h"
#include "models/model.h"
#include "report/json_io.h"

namespace dtbench::cli {
namespace {

std::string temp_json_path() {
  const auto dir = std::filesystem::temp_directory_path();
  std::string templ = (dir / "dtbench-job-XXXXXX").string();
  const int fd = mkstemp(templ.data());
  if (fd < 0) throw IoError(fmt::format("cannot create a temporary file in {}", dir.string()));
  close(fd);
  return templ;
}

}  // namespace

nlohmann::ordered_json train_config_json(const train::TrainOptions& t) {
  return {{"model", t.model},
          {"batch_size", t.batch_size},
          {"image_size", t.image_size},
          {"seq_len", t.seq_len},
          {"layers", t.layers},
          {"width", t.width},
          {"num_classes", t.num_classes},
          {"iters", t.iters},
          {"warmup", t.warmup},
          {"threads", t.threads},
          {"seed", t.seed},
          {"reducer", t.reducer},
          {"bucket_cap_mb", t.bucket_cap_mb},
          {"first_bucket_cap_mb", t.first_bucket_cap_mb},
          {"compression", t.compression},
          {"amp", t.amp ? "bf16" : "none"},
          {"broadcast_buffers", t.broadcast_buffers},
          {"optimizer", "sgd"},
          {"lr", t.lr},
          {"momentum", t.momentum}};
}

std::vector<std::string> ddp_worker_args(const train::TrainOptions& t, const RunOptions& run,
                                         int world, const std::string& label,
                                         const std::string& out_json) {
  std::vector<std::string> a{launch::self_executable(), "ddp",
                             "--model", t.model,
                             "--batch-size", std::to_string(t.batch_size),
                             "--image-size", std::to_string(t.image_size),
                             "--seq-len", std::to_string(t.seq_len),
                             "--layers", std::to_string(t.layers),
                             "--width", std::to_string(t.width),
                             "--num-classes", std::to_string(t.num_classes),
                             "--iters", std::to_string(t.iters),
                             "--warmup", std::to_string(t.warmup),
                             "--threads", std::to_string(t.threads),
                             "--seed", std::to_string(t.seed),
                             "--reducer", t.reducer,
                             "--bucket-cap-mb", fmt::format("{}", t.bucket_cap_mb),
                             "--first-bucket-cap-mb", fmt::format("{}", t.first_bucket_cap_mb),
                             "--compression", t.compression,
                             "--lr", fmt::format("{}", t.lr),
                             "--momentum", fmt::format("{}", t.momentum),
                             "--backend", run.comm.backend,
                             "--timeout", run.timeout_text,
                             "--world-sizes", std::to_string(world),
                             "--run-json", out_json,
                             "--label", label};
  if (t.amp) a.push_back("--amp");
  if (!t.broadcast_buffers) a.push_back("--no-broadcast-buffers");
  if (!run.comm.iface.empty()) {
    a.push_back("--iface");
    a.push_back(run.comm.iface);
  }
  return a;
}

DdpJobOutcome run_ddp_job(const train::TrainOptions& t, const RunOptions& run, int world,
                          const std::string& label) {
  const std::string tmp = temp_json_path();
  DdpJobOutcome out;
  try {
    out.status = launch_workers(world, run.comm.backend, ddp_worker_args(t, run, world, label, tmp));
    if (out.status == 0) out.record = report::read_json_file(tmp);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  std::remove(tmp.c_str());
  return out;
}

void check_trainable(const train::TrainOptions& t, const std::string& backend) {
  train::validate(t);
  if (t.reducer == "ddp") comm::require_c10d_group(backend);
  const auto& entry = models::find_model(t.model);
  if (t.image_size < entry.min_image_size)
    throw UsageError(fmt::format("--image-size {}: {} needs images of at least {}x{}", t.image_size,
                                 entry.name, entry.min_image_size, entry.min_image_size));
}

}  // namespace dtbench::cli
