#pragma once
// The BLAS library's own thread pool. Debian's LibTorch multiplies through
// OpenBLAS's pthreads build, whose worker pool (one thread per core) ignores
// at::set_num_threads and spins in sched_yield between calls: with
// `--threads 1` a rank still ran matrix products on two threads and kept a
// second core busy, so ranks sharing a node took each other's cores
// (docs/PERFORMANCE.md, "Projection"). Whoever sets a rank's intra-op threads
// sets this pool to the same count. Torch-free: the symbols are looked up in
// the process at run time, so builds whose BLAS has no pool (MKL under
// OpenMP, the wheel) are untouched.
#include <string>

namespace dtbench {

// Sets the BLAS pool to `threads` (>= 1) when the loaded BLAS has one
// (openblas_set_num_threads); returns the pool size after the call, 0 when
// there is no such pool to set.
int set_blas_threads(int threads);

// The BLAS pool's size now (openblas_get_num_threads), 0 without one.
int blas_threads();

}  // namespace dtbench
