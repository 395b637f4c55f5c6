// The micro-batch sizes the planner tries and eth_profile measures where nothing says otherwise
// (a scenario's micro_batches, --micro-batches): powers of two up to 8, the sizes at which a
// GPT-2 stage's GEMMs are already wide enough that larger ones gain little per sample and the
// activations of 1F1B's slots still fit (docs/planner.md).
#pragma once

#include <vector>

namespace eth::planner {

inline const std::vector<int> kDefaultMicroBatches = {1, 2, 4, 8};

}  // namespace eth::planner
