/* Peer for `dtbench comm --backend mpi`: a plain MPI_Allreduce program timed
 * the way dtbench times (warm-up, barrier, N back-to-back calls, mean per call,
 * mean over ranks). Usage: mpirun -np 2 mpi_allreduce N WARMUP BYTES...
 * Prints per size: bytes out_of_place_us in_place_us. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double time_one(float* send, float* recv, int count, int iters, int warmup) {
  for (int i = 0; i < warmup; ++i) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double us = (MPI_Wtime() - start) / iters * 1e6, sum = 0;
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / size;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 4) {
    if (rank == 0) fprintf(stderr, "usage: mpi_allreduce ITERS WARMUP BYTES...\n");
    MPI_Finalize();
    return 2;
  }
  int iters = atoi(argv[1]), warmup = atoi(argv[2]);
  for (int a = 3; a < argc; ++a) {
    long bytes = atol(argv[a]);
    int count = (int)(bytes / 4);
    float* send = calloc((size_t)count + 1, sizeof(float));
    float* recv = calloc((size_t)count + 1, sizeof(float));
    for (int i = 0; i < count; ++i) send[i] = recv[i] = 1.0f;
    double oop = time_one(send, recv, count, iters, warmup);
    double ip = time_one(MPI_IN_PLACE, recv, count, iters, warmup);
    if (rank == 0) printf("%ld %.2f %.2f\n", bytes, oop, ip);
    fflush(stdout);
    free(send);
    free(recv);
  }
  MPI_Finalize();
  return 0;
}
