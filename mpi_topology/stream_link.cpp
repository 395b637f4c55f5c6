#include "mpi_topology/stream_link.hpp"

#include <algorithm>

#include "mpi_topology/mpi_session.hpp"

namespace eth {

StreamLink StreamLink::create(const RowExchange& exchange, const std::vector<int>& node_of_rank, int world_rank,
                              StreamCollectives& streams) {
  const int node = node_of_rank[static_cast<size_t>(world_rank)];
  auto here = [&](int r) { return node_of_rank[static_cast<size_t>(r)] == node; };
  StreamLink link;
  bool local_message = false;
  for (const RowTransfer& t : exchange.transfers()) {
    const int from = exchange.senders()[static_cast<size_t>(t.from)], to = exchange.receivers()[static_cast<size_t>(t.to)];
    if (!here(from) || !here(to)) continue;
    local_message = true;
    link.members_.push_back(from);
    link.members_.push_back(to);
  }
  std::sort(link.members_.begin(), link.members_.end());
  link.members_.erase(std::unique(link.members_.begin(), link.members_.end()), link.members_.end());
  if (!local_message || !std::binary_search(link.members_.begin(), link.members_.end(), world_rank)) {
    link.members_.clear();
    return link;
  }
  MPI_Group world_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_group(world_comm(), &world_group));
  MPI_CHECK(MPI_Group_incl(world_group, static_cast<int>(link.members_.size()), link.members_.data(), &group));
  MPI_CHECK(MPI_Comm_create_group(world_comm(), group, /*tag=*/7, &comm));
  link.comm_ = streams.new_communicator(comm);
  MPI_CHECK(MPI_Comm_free(&comm));
  MPI_CHECK(MPI_Group_free(&group));
  MPI_CHECK(MPI_Group_free(&world_group));
  return link;
}

bool StreamLink::carries(int peer) const {
  return comm_ != nullptr && std::binary_search(members_.begin(), members_.end(), peer);
}

int StreamLink::peer_rank(int peer) const {
  return static_cast<int>(std::lower_bound(members_.begin(), members_.end(), peer) - members_.begin());
}

}  // namespace eth
