// A user's topology against the GPU each rank found: the plan was made for the devices the
// topology declares, so a rank on another GPU (another family, or less memory than declared)
// would run a plan that does not fit it.
#pragma once

#include "kernels/device_info.hpp"
#include "lib/plan/topology.hpp"

namespace eth {

// "" when `found` (this rank's device) is what `declared` says, else why not. A declared name
// that names no known GPU (a generic "gpu", a CPU type) claims only its memory; a CPU rank is
// not checked (its "memory" is a share of the host's, which the topology sets).
std::string device_mismatch(const DeviceType& declared, const kernels::DeviceInfo& found);

// Collective over every rank of the job: each rank compares the device `topology` gives it with
// the GPU it computes on. Throws AgreedError on every rank, naming the first rank that differs,
// its host and both devices.
void check_devices_match(const Topology& topology, const kernels::DeviceSettings& settings);

}  // namespace eth
