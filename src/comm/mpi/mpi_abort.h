#pragma once
// Ending an MPI job whose call made no progress (compiled only with MPI).
#include <string>

namespace dtbench::comm {

// Writes `line` to stderr with write(2) (the main thread is inside MPI and
// may hold stdio's locks), then MPI_Abort from this (watchdog) thread. The
// MPI standard promises nothing for a call from a second thread while the
// first is inside MPI under MPI_THREAD_SERIALIZED, and an abort may block
// on the very peer that hung: a detached thread ends the process with
// _exit(3) after 5 s whatever MPI does.
[[noreturn]] void mpi_abort_hung(const std::string& line);

}  // namespace dtbench::comm
