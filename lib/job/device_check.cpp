#include "lib/job/device_check.hpp"

#include <mpi.h>
#include <unistd.h>

#include "kernels/gpu_peaks.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/job/agreed.hpp"

namespace eth {
namespace {

// "A100" for "A100-SXM4-80GB": the family a datasheet entry belongs to.
std::string family(const kernels::GpuPeak& peak) {
  const std::string pattern = peak.pattern;
  return pattern.substr(0, pattern.find_first_of("- "));
}

// A GPU's memory as the topology writes it can be the marketing figure (80 GB for 85.1e9 bytes,
// 16 GB for 15.8e9): 5% of slack before "less memory than declared".
constexpr double kMemorySlack = 1.05;

}  // namespace

std::string device_mismatch(const DeviceType& declared, const kernels::DeviceInfo& found) {
  if (!found.gpu) return "";
  const kernels::GpuPeak* claimed = kernels::find_gpu_peak(declared.name);
  const kernels::GpuPeak* actual = kernels::find_gpu_peak(found.name);
  if (claimed != nullptr && (actual == nullptr || family(*claimed) != family(*actual)))
    return strprintf("another GPU family (%s)", family(*claimed).c_str());
  if (declared.memory_gb > found.memory_gb * kMemorySlack)
    return strprintf("%g GB, more memory than the GPU has", declared.memory_gb);
  return "";
}

void check_devices_match(const Topology& topology, const kernels::DeviceSettings& settings) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(world_comm(), &rank));
  const HostPlace place = host_place();
  agreed([&] {
    const kernels::DeviceInfo found = kernels::describe_device(place.local_rank, place.local_ranks, settings);
    const DeviceType& declared = topology.device_of(rank);
    const std::string why = device_mismatch(declared, found);
    if (why.empty()) return;
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    throw InputError(strprintf("%s: rank %d on %s: expected the device the topology declares, %s (%g GB), but it "
                               "computes on %s (%.1f GB) %s: %s",
                               topology.source.c_str(), rank, host, declared.name.c_str(), declared.memory_gb,
                               found.name.c_str(), found.memory_gb, found.uuid.c_str(), why.c_str()));
  });
}

}  // namespace eth
