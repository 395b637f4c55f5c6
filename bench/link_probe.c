// Point-to-point rate and latency between rank 0 and rank 1 as the runtime's transfers see them
// (MPI_Isend/MPI_Irecv, waited): one direction, then both at once (a NIC's two directions are
// separate), then a 4-byte ping-pong. For the planner's network model on an emulated cluster
// (docs/emulated-cluster.md). Prints on rank 0: "one_way_GBs both_ways_GBs latency_us", medians of 7.
//   mpirun -np 2 link_probe BYTES
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { K = 7 };

static double median(double* t) {
  for (int i = 0; i < K; i++)
    for (int j = i + 1; j < K; j++)
      if (t[j] < t[i]) { double s = t[i]; t[i] = t[j]; t[j] = s; }
  return t[K / 2];
}

// Seconds for rank 0 -> 1 (and 1 -> 0 too when `both`) of n bytes.
static double transfer(char* out, char* in, int n, int both, int rank) {
  MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  if (rank == 0 || both) MPI_Isend(out, n, MPI_CHAR, 1 - rank, 0, MPI_COMM_WORLD, &r[0]);
  if (rank == 1 || both) MPI_Irecv(in, n, MPI_CHAR, 1 - rank, 0, MPI_COMM_WORLD, &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);  // the receiver's end, not the sender's buffer release
  return MPI_Wtime() - t0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int n = atoi(argv[1]);
  char* out = calloc((size_t)n, 1);
  char* in = calloc((size_t)n, 1);
  double one[K], two[K], lat[K];
  for (int k = 0; k < K; k++) one[k] = transfer(out, in, n, 0, rank);
  for (int k = 0; k < K; k++) two[k] = transfer(out, in, n, 1, rank);
  for (int k = 0; k < K; k++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < 100; i++) {
      if (rank == 0) {
        MPI_Send(out, 4, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(in, 4, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(in, 4, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(out, 4, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
      }
    }
    lat[k] = (MPI_Wtime() - t0) / 200;
  }
  if (rank == 0) printf("%.4f %.4f %.1f\n", n / median(one) / 1e9, n / median(two) / 1e9, median(lat) * 1e6);
  MPI_Finalize();
  return 0;
}
