#include "comm/backends.h"

#include <fmt/format.h>

#include "build_config.h"  // generated: DTBENCH_HAVE_MPI, DTBENCH_HAVE_NCCL
#include "core/error.h"

namespace dtbench::comm {

std::vector<BackendInfo> known_backends() {
  constexpr bool mpi = DTBENCH_HAVE_MPI != 0;
  constexpr bool nccl = DTBENCH_HAVE_NCCL != 0;
  return {
      {"gloo", true, "", "CPU collectives over TCP (c10d ProcessGroupGloo)", true},
      {"mpi", mpi, "",
       mpi ? "MPI collectives through the MPI C API (run under mpirun)"
           : "MPI collectives (not built: no MPI found at build time)",
       false},
      {"nccl", nccl, "",
       nccl ? "GPU collectives (c10d ProcessGroupNCCL; CUDA tensors, one GPU per rank)"
            : "GPU collectives (not built: this LibTorch has no CUDA; build the wheel flavour, make TORCH=wheel)",
       nccl},
  };
}

void require_c10d_group(const std::string& backend) {
  for (const auto& b : known_backends())
    if (b.name == backend && !b.c10d_group)
      throw UsageError(fmt::format(
          "--reducer ddp drives c10d::Reducer, which needs a c10d process group; the {} backend "
          "has none in this build (use --backend gloo, or --reducer overlap/sync with {})",
          backend, backend));
}

void require_backend(const std::string& name) {
  std::string known;
  for (const auto& b : known_backends()) {
    if (b.name == name) {
      if (!b.built) throw UsageError(fmt::format("backend '{}' is not built into this dtbench: {}", name, b.description));
      return;
    }
    known += (known.empty() ? "" : ", ") + b.name;
  }
  throw UsageError(fmt::format("unknown backend '{}' (valid: {})", name, known));
}

std::string out_of_place_reason(const std::string& backend, Collective c) {
  if (backend != "gloo" && backend != "nccl") return "";
  if (c != Collective::kAllreduce && c != Collective::kBroadcast && c != Collective::kReduce) return "";
  return fmt::format("{}: c10d's {} works in place (an out-of-place call copies the input into the output first)",
                     backend, to_string(c));
}

}  // namespace dtbench::comm
