// The all-reduce bus bandwidth the planner's cost model needs, measured with the call the runtime
// makes (MPI_Iallreduce polled with MPI_Test): bench/run_plan_vs_measured*.sh put it in the
// topology they plan with. Prints "GB/s ms" (median of 9) on rank 0.
//   mpirun -np N iallreduce_bandwidth FLOATS
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int N = atoi(argv[1]); enum { K = 9 };
  float* x = malloc((size_t)N * sizeof(float)); double t[K];
  for (int i = 0; i < N; i++) x[i] = 1.0f;
  for (int k = 0; k < K; k++) {
    MPI_Barrier(MPI_COMM_WORLD); double t0 = MPI_Wtime();
    MPI_Request r; int done = 0;
    MPI_Iallreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
    while (!done) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    t[k] = MPI_Wtime() - t0;
  }
  for (int i = 0; i < K; i++) for (int j = i + 1; j < K; j++) if (t[j] < t[i]) { double s = t[i]; t[i] = t[j]; t[j] = s; }
  if (rank == 0) printf("%.3f %.2f\n", 2.0 * (n - 1) / n * N * 4.0 / t[K / 2] / 1e9, t[K / 2] * 1e3);
  MPI_Finalize(); return 0;
}
