// The node-local part of one direction of a stage boundary on the NCCL path: a communicator
// over the boundary's senders and receivers on this rank's node, on which each message between
// two of them travels as a send and a receive on streams (stream_collectives.hpp), device
// memory to device memory. Messages to or from another node stay on MPI.
#pragma once

#include <vector>

#include "mpi_topology/row_exchange.hpp"
#include "mpi_topology/stream_collectives.hpp"

namespace eth {

class StreamLink {
 public:
  StreamLink() = default;  // no messages inside the node

  // Collective over the senders and receivers of `exchange` on this rank's node (node_of_rank,
  // by world rank), which must call it in the same order of boundaries (a pipeline's boundaries
  // from its first stage on); `exchange` is the boundary's full micro-batch exchange (a short
  // last micro-batch has the same ranks). No communicator is made where no sender and receiver
  // share the node; this rank need not be a member.
  static StreamLink create(const RowExchange& exchange, const std::vector<int>& node_of_rank, int world_rank,
                           StreamCollectives& streams);

  // Whether the message with world rank `peer` travels on the stream path.
  bool carries(int peer) const;
  int peer_rank(int peer) const;  // its rank in the communicator
  StreamCollectives::Communicator* comm() const { return comm_; }

 private:
  std::vector<int> members_;  // world ranks, ascending; empty: no communicator
  StreamCollectives::Communicator* comm_ = nullptr;
};

}  // namespace eth
