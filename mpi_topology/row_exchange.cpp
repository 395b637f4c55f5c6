#include "mpi_topology/row_exchange.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>

#include "mpi_topology/mpi_counts.hpp"

namespace eth {
namespace {

std::vector<int> offsets_of(const std::vector<int>& rows) {
  std::vector<int> offsets(rows.size(), 0);
  std::exclusive_scan(rows.begin(), rows.end(), offsets.begin(), 0);
  return offsets;
}

int index_of(const std::vector<int>& ranks, int rank) {
  const auto it = std::find(ranks.begin(), ranks.end(), rank);
  assert(it != ranks.end());
  return static_cast<int>(it - ranks.begin());
}

}  // namespace

std::vector<RowTransfer> plan_row_transfers(const std::vector<int>& from_rows, const std::vector<int>& to_rows) {
  assert(std::accumulate(from_rows.begin(), from_rows.end(), 0) == std::accumulate(to_rows.begin(), to_rows.end(), 0));
  std::vector<RowTransfer> transfers;
  // Walk both partitions together: each step ends where either range ends.
  int i = 0, j = 0, row = 0;
  int from_end = from_rows.empty() ? 0 : from_rows[0];
  int to_end = to_rows.empty() ? 0 : to_rows[0];
  while (i < static_cast<int>(from_rows.size()) && j < static_cast<int>(to_rows.size())) {
    const int end = std::min(from_end, to_end);
    if (end > row) transfers.push_back({i, j, row, end - row});
    row = end;
    if (from_end == end && ++i < static_cast<int>(from_rows.size())) from_end += from_rows[i];
    if (to_end == end && ++j < static_cast<int>(to_rows.size())) to_end += to_rows[j];
  }
  return transfers;
}

RowExchange::RowExchange(std::vector<int> from_ranks, std::vector<int> from_rows, std::vector<int> to_ranks,
                         std::vector<int> to_rows)
    : from_ranks_(std::move(from_ranks)),
      from_offsets_(offsets_of(from_rows)),
      to_ranks_(std::move(to_ranks)),
      to_offsets_(offsets_of(to_rows)),
      transfers_(plan_row_transfers(from_rows, to_rows)) {}

std::vector<int> RowExchange::senders_to(int world_rank) const {
  const int me = index_of(to_ranks_, world_rank);
  std::vector<int> ranks;
  for (const RowTransfer& t : transfers_)
    if (t.to == me) ranks.push_back(from_ranks_[t.from]);
  return ranks;
}

std::vector<int> RowExchange::receivers_from(int world_rank) const {
  const int me = index_of(from_ranks_, world_rank);
  std::vector<int> ranks;
  for (const RowTransfer& t : transfers_)
    if (t.from == me) ranks.push_back(to_ranks_[t.to]);
  return ranks;
}

std::vector<RowMessage> RowExchange::sends_of(int world_rank, size_t row_elems) const {
  const int me = index_of(from_ranks_, world_rank);
  std::vector<RowMessage> messages;
  for (const RowTransfer& t : transfers_)
    if (t.from == me)
      messages.push_back({to_ranks_[t.to], static_cast<size_t>(t.row_begin - from_offsets_[me]) * row_elems,
                          static_cast<size_t>(t.rows) * row_elems});
  return messages;
}

std::vector<RowMessage> RowExchange::receives_of(int world_rank, size_t row_elems) const {
  const int me = index_of(to_ranks_, world_rank);
  std::vector<RowMessage> messages;
  for (const RowTransfer& t : transfers_)
    if (t.to == me)
      messages.push_back({from_ranks_[t.from], static_cast<size_t>(t.row_begin - to_offsets_[me]) * row_elems,
                          static_cast<size_t>(t.rows) * row_elems});
  return messages;
}

void RowExchange::post_sends(int world_rank, const WireWord* rows, size_t row_words, int tag, MPI_Comm comm,
                             std::vector<MPI_Request>& requests) const {
  for (const RowMessage& m : sends_of(world_rank, row_words))
    large_isend(rows + m.offset, m.count, wire_word_type(), m.peer, tag, comm, requests);
}

void RowExchange::post_recvs(int world_rank, WireWord* rows, size_t row_words, int tag, MPI_Comm comm,
                             std::vector<MPI_Request>& requests) const {
  for (const RowMessage& m : receives_of(world_rank, row_words))
    large_irecv(rows + m.offset, m.count, wire_word_type(), m.peer, tag, comm, requests);
}

}  // namespace eth
