// MPI calls for element counts beyond MPI's `int`. Open MPI 4.1 has no MPI-4 large-count (`_c`)
// calls, so each function here takes a size_t count and posts as many calls as it needs, each
// of at most mpi_count_limit() elements, appending one request per call to `requests`; the
// operation is complete when all of them are. A count of 0 posts nothing, on every rank alike.
//
// Why consecutive calls on pieces, not a derived datatype (a contiguous block of elements plus a
// remainder): both need more than one call once the count is not a multiple of the block, and
// pieces are plainly correct for each kind of operation:
// - point to point: messages between one pair with one tag on one communicator are matched in
//   the order they are posted (MPI's non-overtaking rule), so the pieces land in order;
// - reductions and broadcasts: an element's result does not depend on the other elements, so the
//   pieces give exactly the whole's result; every member posts them in the same order, as MPI
//   requires of collectives on one communicator;
// - v-collectives: their displacements are `int` too (a gather of parts that each fit can still
//   overflow them), and no one datatype describes parts of arbitrary sizes: so a gather to all is
//   one broadcast per member, and a gather to one member is point to point.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace eth {

// The most elements one MPI call carries: INT_MAX, unless lowered for a test.
size_t mpi_count_limit();

// Test-only: lowers the limit while it lives, so that small buffers take the pieced path that
// only counts over 2^31 take in a job (CI cannot allocate 8 GiB).
class MpiCountLimitForTest {
 public:
  explicit MpiCountLimitForTest(size_t limit);
  ~MpiCountLimitForTest();
  MpiCountLimitForTest(const MpiCountLimitForTest&) = delete;
  MpiCountLimitForTest& operator=(const MpiCountLimitForTest&) = delete;

 private:
  size_t saved_;
};

// Point to point of data[0, n) (elements of `type`).
void large_isend(const void* data, size_t n, MPI_Datatype type, int to, int tag, MPI_Comm comm,
                 std::vector<MPI_Request>& requests);
void large_irecv(void* data, size_t n, MPI_Datatype type, int from, int tag, MPI_Comm comm,
                 std::vector<MPI_Request>& requests);

// Collectives over every member of `comm`, in place in data[0, n).
void large_iallreduce(void* data, size_t n, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                      std::vector<MPI_Request>& requests);
// The reduction arrives in `root`'s data; elsewhere data is only read.
void large_ireduce(void* data, size_t n, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
                   std::vector<MPI_Request>& requests);
void large_ibcast(void* data, size_t n, MPI_Datatype type, int root, MPI_Comm comm, std::vector<MPI_Request>& requests);

// `data` holds one part per member of `comm`, in rank order (rank i's is counts[i] elements).
// In place: each member's own part is already there; afterwards every member has every part.
void large_iallgatherv(void* data, const std::vector<size_t>& counts, MPI_Datatype type, MPI_Comm comm,
                       std::vector<MPI_Request>& requests);
// Each member's `mine` (counts[rank] elements) lands in rank 0's `all` (ignored elsewhere), as
// point-to-point messages tagged `tag` on `comm`.
void large_igatherv_to_first(const void* mine, void* all, const std::vector<size_t>& counts, MPI_Datatype type,
                             int tag, MPI_Comm comm, std::vector<MPI_Request>& requests);

}  // namespace eth
