#include "mpi_topology/gpu_identity.hpp"

#include <algorithm>
#include <cstring>

#include "mpi_topology/mpi_session.hpp"

namespace eth {
namespace {

// Fixed-size record for one all-gather; a UUID is 40 characters, a host name at most
// MPI_MAX_PROCESSOR_NAME (truncated here: it only names the rank in a message).
struct GpuRecord {
  char host[128];
  char uuid[64];
};

void copy_truncated(char* dst, size_t size, const std::string& src) {
  const size_t n = std::min(size - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

}  // namespace

std::vector<RankGpu> gather_rank_gpus(const std::string& my_uuid) {
  char host[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  MPI_CHECK(MPI_Get_processor_name(host, &length));
  GpuRecord mine{};
  copy_truncated(mine.host, sizeof(mine.host), std::string(host, static_cast<size_t>(length)));
  copy_truncated(mine.uuid, sizeof(mine.uuid), my_uuid);
  int world = 0;
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world));
  std::vector<GpuRecord> all(static_cast<size_t>(world));
  MPI_CHECK(MPI_Allgather(&mine, sizeof(GpuRecord), MPI_BYTE, all.data(), sizeof(GpuRecord), MPI_BYTE, MPI_COMM_WORLD));
  std::vector<RankGpu> gpus;
  for (const GpuRecord& r : all) gpus.push_back({r.host, r.uuid});
  return gpus;
}

std::string nccl_obstacle(const std::vector<int>& node_of_rank, const std::vector<RankGpu>& gpus) {
  for (size_t i = 0; i < gpus.size(); i++) {
    const std::string me = "rank " + std::to_string(i) + " on " + gpus[i].host;
    if (gpus[i].uuid.empty()) return me + " computes on the CPU";
    for (size_t j = 0; j < i; j++)
      if (node_of_rank[i] == node_of_rank[j] && gpus[i].uuid == gpus[j].uuid)
        return me + " and rank " + std::to_string(j) + " on " + gpus[j].host + " of the same node share GPU " +
               gpus[i].uuid;
  }
  return "";
}

}  // namespace eth
