#pragma once
// Which backends this build has, without LibTorch: the front end checks
// --backend before it hands a command to dtbench-torch (cli/jobs.h), which
// makes the communicator (comm/factory.h).
#include <string>
#include <vector>

#include "comm/types.h"

namespace dtbench::comm {

struct BackendInfo {
  std::string name;
  bool built = false;       // compiled into this binary
  std::string version;      // library version string, when built (comm::backends() fills it)
  std::string description;  // one line
  bool c10d_group = false;  // offers a c10d::ProcessGroup (what --reducer ddp needs)
};

// gloo, mpi, nccl: built or not, from the build's configuration.
std::vector<BackendInfo> known_backends();

// Throws UsageError for an unknown backend or one not built in.
void require_backend(const std::string& name);

// Throws UsageError when `backend` cannot drive c10d::Reducer (--reducer ddp).
void require_c10d_group(const std::string& backend);

// "" when `backend` has an out-of-place form of `c` (input and output
// buffers apart, one call); else why not. The c10d backends (gloo, nccl)
// allreduce, broadcast and reduce in place: an out-of-place call copies the
// input into the output first (Communicator::out_of_place_reason).
std::string out_of_place_reason(const std::string& backend, Collective c);

}  // namespace dtbench::comm
