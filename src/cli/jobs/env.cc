// `dtbench env`'s run: collects the environment (LibTorch's versions and
// threads, the backends, BLAS, CPU and GPU topology) and an optional matmul
// probe; prints it and writes it as JSON.
#include <iostream>

#include <ATen/Parallel.h>

#include "bench/env_info.h"
#include "cli/jobs.h"
#include "core/blas_threads.h"
#include "device/device.h"
#include "report/env_reporter.h"
#include "report/json_io.h"

namespace dtbench::cli {

int env_job(const EnvFlags& f) {
  device::check_available(f.device, 1);
  if (f.threads > 0) {
    at::set_num_threads(f.threads);
    set_blas_threads(f.threads);
  }
  auto env = bench::collect_env();
  if (f.probe) env["probe"] = f.device == "cuda" ? bench::probe_matmul_gpu() : bench::probe_matmul();
  if (f.as_json) {
    std::cout << env.dump(2) << "\n";
  } else {
    report::print_env(std::cout, env);
  }
  if (!f.json_path.empty()) report::write_json_atomic(f.json_path, env);
  return 0;
}

}  // namespace dtbench::cli
