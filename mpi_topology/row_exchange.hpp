// m:n redistribution of a micro-batch between two groups of ranks that split its rows (samples)
// differently: sender i holds rows [from_offset_i, from_offset_i + from_rows_i), receiver j
// wants rows [to_offset_j, to_offset_j + to_rows_j), both in order, the same total. Every
// overlap of a sender's and a receiver's range is one message (in pieces past MPI's int count,
// mpi_counts.hpp). Rows are contiguous in both buffers ((rows, row_elems), row-major), so each
// message is one contiguous slice.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "mpi_topology/wire_word.hpp"

namespace eth {

struct RowTransfer {
  int from = 0;       // index into the senders
  int to = 0;         // index into the receivers
  int row_begin = 0;  // first row, counted over the whole micro-batch
  int rows = 0;
};

// The overlaps, in row order. Pure: testable without MPI.
std::vector<RowTransfer> plan_row_transfers(const std::vector<int>& from_rows, const std::vector<int>& to_rows);

// One message of an exchange as one of its ends sees it: the other end, and where the rows lie
// in this end's buffer.
struct RowMessage {
  int peer = 0;       // world rank
  size_t offset = 0;  // first element in this rank's rows
  size_t count = 0;   // elements
};

class RowExchange {
 public:
  RowExchange() = default;
  RowExchange(std::vector<int> from_ranks, std::vector<int> from_rows, std::vector<int> to_ranks,
              std::vector<int> to_rows);

  // Posts this rank's non-blocking sends of `rows` ((its from_rows, row_words) words); it must be a sender.
  void post_sends(int world_rank, const WireWord* rows, size_t row_words, int tag, MPI_Comm comm,
                  std::vector<MPI_Request>& requests) const;
  // Posts this rank's non-blocking receives into `rows` ((its to_rows, row_words) words); a receiver.
  void post_recvs(int world_rank, WireWord* rows, size_t row_words, int tag, MPI_Comm comm,
                  std::vector<MPI_Request>& requests) const;

  // This rank's messages, as a sender or as a receiver, in row order, of rows of `row_elems`.
  std::vector<RowMessage> sends_of(int world_rank, size_t row_elems) const;
  std::vector<RowMessage> receives_of(int world_rank, size_t row_elems) const;

  const std::vector<RowTransfer>& transfers() const { return transfers_; }
  const std::vector<int>& senders() const { return from_ranks_; }
  const std::vector<int>& receivers() const { return to_ranks_; }
  // The ranks `world_rank` receives from (as a receiver) or sends to (as a sender), in row order.
  std::vector<int> senders_to(int world_rank) const;
  std::vector<int> receivers_from(int world_rank) const;

 private:
  std::vector<int> from_ranks_, from_offsets_, to_ranks_, to_offsets_;
  std::vector<RowTransfer> transfers_;
};

}  // namespace eth
