/* Peer for `dtbench comm --backend mpi --collective allgatherv,reduce_scatter_v,
 * alltoallv --split-sizes skewed`: the same MPI calls on the same uneven parts
 * (float32, sum), timed the way dtbench times: warm-up, barrier, each call
 * timed on its own on the next window of buffers sized, per collective, for
 * the most any size of the sweep needs (dtbench's arena), the mean per rank,
 * then the mean over the ranks; and the median of every rank's calls pooled.
 *   allgatherv:       rank i contributes count * (1 + i) / T elements (T the
 *                     weights' sum, the remainder to the last rank); size is
 *                     the gathered buffer.
 *   reduce_scatter_v: the same parts of a `count`-element input.
 *   alltoallv:        rank i sends rank j count * (1 + (i + j) mod n) / T,
 *                     the remainder to itself; size is what each rank sends.
 * Usage: mpirun -np N mpi_vcollectives_peer ITERS WARMUP BYTES...
 * Prints per collective and size: name bytes mean_us p50_us. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Rank parts of `count` in proportion to 1 + i (dtbench's vsplit_counts). */
static void rank_parts(int n, long count, int* parts) {
  long total = (long)n * (n + 1) / 2, given = 0;
  for (int i = 0; i < n; ++i) {
    parts[i] = (int)(count * (1 + i) / total);
    given += parts[i];
  }
  parts[n - 1] += (int)(count - given);
}

/* What rank `me` sends each rank in alltoallv (dtbench's vsplit_matrix row). */
static void a2a_row(int n, int me, long count, int* row) {
  long total = 0, given = 0;
  for (int j = 0; j < n; ++j) total += 1 + (me + j) % n;
  for (int j = 0; j < n; ++j) {
    row[j] = (int)(count * (1 + (me + j) % n) / total);
    given += row[j];
  }
  row[me] += (int)(count - given);
}

static void displs_of(int n, const int* c, int* d) {
  int at = 0;
  for (int i = 0; i < n; ++i) {
    d[i] = at;
    at += c[i];
  }
}

/* One collective's parts at `count` elements: the counts and displacements
 * it is called with, and this rank's input and output element counts. */
static void layout(int which, int n, int rank, long count, int* c, int* d, int* rc, int* rd, int* rows,
                   long* in_n, long* out_n) {
  *in_n = count;
  *out_n = count;
  if (which < 2) {
    rank_parts(n, count, c);
    displs_of(n, c, d);
    if (which == 0) *in_n = c[rank];
    else *out_n = c[rank];
    return;
  }
  for (int i = 0; i < n; ++i) a2a_row(n, i, count, rows + (size_t)i * n);
  for (int j = 0; j < n; ++j) {
    c[j] = rows[(size_t)rank * n + j];
    rc[j] = rows[(size_t)j * n + rank];
  }
  displs_of(n, c, d);
  displs_of(n, rc, rd);
  *out_n = 0;
  for (int j = 0; j < n; ++j) *out_n += rc[j];
}

/* A buffer of `len` floats, 64-byte aligned and touched (ones), as dtbench's. */
static float* arena(long len) {
  float* p = NULL;
  if (posix_memalign((void**)&p, 64, (size_t)(len > 0 ? len : 1) * sizeof(float)) != 0) {
    fprintf(stderr, "mpi_vcollectives_peer: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (long k = 0; k < len; ++k) p[k] = 1.0f;
  return p;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc < 4) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np N mpi_vcollectives_peer ITERS WARMUP BYTES...\n");
    MPI_Finalize();
    return 2;
  }
  const int iters = atoi(argv[1]), warmup = atoi(argv[2]);
  int *c = malloc(sizeof(int) * (size_t)n), *d = malloc(sizeof(int) * (size_t)n);
  int *rc = malloc(sizeof(int) * (size_t)n), *rd = malloc(sizeof(int) * (size_t)n);
  double* t = malloc(sizeof(double) * (size_t)iters);
  double* all = malloc(sizeof(double) * (size_t)iters * (size_t)n);
  int* rows = malloc(sizeof(int) * (size_t)n * (size_t)n);
  const char* names[] = {"allgatherv", "reduce_scatter_v", "alltoallv"};
  for (int which = 0; which < 3; ++which) {
    /* As dtbench's arena: per collective, an input and an output buffer
     * holding the most this rank's part needs at any size of the sweep; each
     * size cycles over as many windows of its parts as fit (so the working
     * set, and what of it stays in the caches, is dtbench's). */
    long in_cap = 1, out_cap = 1, in_n, out_n;
    for (int a = 3; a < argc; ++a) {
      layout(which, n, rank, atol(argv[a]) / 4, c, d, rc, rd, rows, &in_n, &out_n);
      if (in_n > in_cap) in_cap = in_n;
      if (out_n > out_cap) out_cap = out_n;
    }
    float *in = arena(in_cap), *out = arena(out_cap);
    for (int a = 3; a < argc; ++a) {
      const long bytes = atol(argv[a]);
      layout(which, n, rank, bytes / 4, c, d, rc, rd, rows, &in_n, &out_n);
      long windows = out_n > 0 ? out_cap / out_n : out_cap;
      if (in_n > 0 && in_cap / in_n < windows) windows = in_cap / in_n;
      if (windows < 1) windows = 1;
      if (windows > 4096) windows = 4096; /* dtbench's cap */
      double sum = 0;
      for (int i = -warmup; i < iters; ++i) {
        if (i == 0) MPI_Barrier(MPI_COMM_WORLD);
        /* dtbench's warm-up and timed iterations each count windows from 0. */
        const long w = (i < 0 ? i + warmup : i) % windows;
        float* src = in + w * in_n;
        float* dst = out + w * out_n;
        double s = MPI_Wtime();
        if (which == 0)
          MPI_Allgatherv(src, (int)in_n, MPI_FLOAT, dst, c, d, MPI_FLOAT, MPI_COMM_WORLD);
        else if (which == 1)
          MPI_Reduce_scatter(src, dst, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else
          MPI_Alltoallv(src, c, d, MPI_FLOAT, dst, rc, rd, MPI_FLOAT, MPI_COMM_WORLD);
        if (i >= 0) {
          t[i] = (MPI_Wtime() - s) * 1e6;
          sum += t[i];
        }
      }
      double mean = sum / iters, total = 0;
      MPI_Allreduce(&mean, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      MPI_Gather(t, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        const size_t m = (size_t)iters * (size_t)n;
        qsort(all, m, sizeof(double), cmp);
        const double p50 = m % 2 ? all[m / 2] : 0.5 * (all[m / 2 - 1] + all[m / 2]);
        printf("%s %ld %.3f %.3f\n", names[which], bytes, total / n, p50);
        fflush(stdout);
      }
    }
    free(in);
    free(out);
  }
  free(c);
  free(d);
  free(rc);
  free(rd);
  free(t);
  free(all);
  free(rows);
  MPI_Finalize();
  return 0;
}
