// A job's precision on each device type of its topology: --precision resolved once for the job
// (kernels::resolve_precision) and the path every device type takes at it
// (kernels::precision_path). Backend selection, the memory and cost models, the profiles, the
// settings table and MFU all read these, and decide nothing of their own.
#pragma once

#include <vector>

#include "kernels/precision.hpp"
#include "lib/plan/topology.hpp"

namespace eth {

struct PrecisionPaths {
  kernels::Precision requested = kernels::Precision::fp32;  // --precision
  // The job's, resolved; in automatic its 16-bit format (bf16 where any device has bf16 units),
  // which each device type's path may take in the other 16-bit format (device_precision).
  kernels::Precision precision = kernels::Precision::fp32;
  std::vector<kernels::PrecisionPath> by_type;  // indexed like Topology::device_types

  // Whether some device types store bf16 and others fp16 (automatic on a mixed cluster).
  bool mixes_formats() const {
    for (const kernels::PrecisionPath& path : by_type)
      if (path.storage() != by_type.front().storage()) return true;
    return false;
  }
  // Whether some device type's path computes on a scaled loss (fp16 storage): the job then keeps
  // one loss scale for all (lib/model/loss_scale.hpp).
  bool loss_scaled() const {
    for (const kernels::PrecisionPath& path : by_type)
      if (path.loss_scaled()) return true;
    return false;
  }
  const kernels::PrecisionPath& of_rank(const Topology& topology, int rank) const {
    return by_type[static_cast<size_t>(topology.ranks[static_cast<size_t>(rank)].device_type)];
  }
};

// For a job at `requested` on `topology`. A path the device type cannot take (tf32 without TF32
// units): an InputError naming the topology file and the device type.
PrecisionPaths precision_paths(const Topology& topology, kernels::Precision requested);

}  // namespace eth
