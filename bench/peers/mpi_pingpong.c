/* Peer for `dtbench comm --backend mpi --collective pingpong`: a plain MPI
 * ping-pong (OSU's osu_latency pattern: rank 0 MPI_Send, rank 1 MPI_Recv and
 * MPI_Send back, rank 0 MPI_Recv), timed the way dtbench times: warm-up,
 * barrier, each round trip timed on its own, the mean per rank, then the
 * mean over the 2 ranks; and the median of both ranks' round trips pooled.
 * Usage: mpirun -np 2 mpi_pingpong_peer ITERS WARMUP BYTES...
 * Prints per size: bytes mean_us p50_us (the round trip). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Buffers as dtbench's: rank 0 sends from one and receives into another
 * (OSU's s_buf and r_buf), rank 1 sends back the buffer it received into;
 * both sized for the largest message, iteration i on window i mod (largest /
 * size, at most 4096), as dtbench (and nccl-tests) rotate against cache
 * effects. */
static void round_trip(int rank, char* sbuf, char* rbuf, int bytes) {
  if (rank == 0) {
    MPI_Send(sbuf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
    MPI_Recv(rbuf, bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(rbuf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(rbuf, bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 4 || size != 2) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 mpi_pingpong_peer ITERS WARMUP BYTES...\n");
    MPI_Finalize();
    return 2;
  }
  int iters = atoi(argv[1]), warmup = atoi(argv[2]);
  double* t = malloc(sizeof(double) * (size_t)iters);
  long largest = 1;
  for (int a = 3; a < argc; ++a)
    if (atol(argv[a]) > largest) largest = atol(argv[a]);
  /* 64-byte aligned, as LibTorch's CPU allocator aligns dtbench's tensors. */
  char *sarena = NULL, *rarena = NULL;
  if (posix_memalign((void**)&sarena, 64, (size_t)largest + 64) != 0 ||
      posix_memalign((void**)&rarena, 64, (size_t)largest + 64) != 0) {
    fprintf(stderr, "mpi_pingpong_peer: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(sarena, 1, (size_t)largest + 64);  /* touched, as dtbench's arenas (filled with ones) */
  memset(rarena, 1, (size_t)largest + 64);
  double* all = malloc(sizeof(double) * 2 * (size_t)iters);
  for (int a = 3; a < argc; ++a) {
    int bytes = atoi(argv[a]);
    long windows = bytes > 0 ? largest / bytes : 1;
    if (windows < 1) windows = 1;
    if (windows > 4096) windows = 4096; /* dtbench's cap */
    for (int i = 0; i < warmup; ++i) {
      long off = (i % windows) * (long)bytes;
      round_trip(rank, sarena + off, rarena + off, bytes);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double sum = 0;
    for (int i = 0; i < iters; ++i) {
      double s = MPI_Wtime();
      long off = (i % windows) * (long)bytes;
      round_trip(rank, sarena + off, rarena + off, bytes);
      t[i] = (MPI_Wtime() - s) * 1e6;
      sum += t[i];
    }
    double mean = sum / iters, total = 0;
    MPI_Allreduce(&mean, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Gather(t, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      qsort(all, 2 * (size_t)iters, sizeof(double), cmp);
      double p50 = 0.5 * (all[iters - 1] + all[iters]); /* even count: the two middle values */
      printf("%d %.3f %.3f\n", bytes, total / 2, p50);
      fflush(stdout);
    }
  }
  free(t);
  free(all);
  free(sarena);
  free(rarena);
  MPI_Finalize();
  return 0;
}
