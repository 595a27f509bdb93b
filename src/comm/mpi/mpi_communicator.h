#pragma once
// The `mpi` backend: OpenMPI's C API called directly (Debian's LibTorch has no
// ProcessGroupMPI). Ranks come from mpirun; with world size 1 it also runs
// without mpirun (singleton MPI_Init).
//
// Collectives are the blocking MPI calls (OpenMPI's tuned algorithms); the
// non-blocking MPI_I* variants go through libnbc, which is markedly slower on
// one host. So the Work returned is already complete. A dead rank is handled
// by mpirun, which aborts the whole job. float16/bfloat16 reductions use
// user-defined MPI ops; avg has no MPI equivalent and is refused.
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/factory.h"

namespace dtbench::comm {

std::unique_ptr<Communicator> make_mpi_communicator(const launch::World& world,
                                                    const CommOptions& opts);

// MPI_Get_library_version's first line.
std::string mpi_library_version();

}  // namespace dtbench::comm
