#include "lib/plan/precision_paths.hpp"

#include <stdexcept>

#include "lib/base/input_error.hpp"

namespace eth {

PrecisionPaths precision_paths(const Topology& topology, kernels::Precision requested) {
  std::vector<kernels::DeviceRates> rates;
  for (const DeviceType& type : topology.device_types) rates.push_back(type.rates());
  PrecisionPaths paths{requested, kernels::resolve_precision(requested, rates), {}};
  for (const DeviceType& type : topology.device_types) {
    try {
      const kernels::DeviceRates type_rates = type.rates();
      paths.by_type.push_back(
          kernels::precision_path(kernels::device_precision(requested, paths.precision, type_rates), type_rates));
    } catch (const std::invalid_argument& e) {
      throw InputError(topology.source + ": device_types." + type.name + ": " + e.what());
    }
  }
  return paths;
}

}  // namespace eth
