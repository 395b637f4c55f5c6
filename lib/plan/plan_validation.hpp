// A plan checked against its topology and model, with a clear message for each broken
// invariant. Apart from plan.hpp because the check of sharded blocks derives the gradient blocks,
// which are themselves derived from a plan.
#pragma once

#include "lib/model/model_config.hpp"
#include "lib/plan/plan.hpp"
#include "lib/plan/topology.hpp"

namespace eth {

// Checks the invariants against the topology and model: every rank in exactly one stage or idle; each
// pipeline's stages cover layers [0, L) in order; each split sums to its micro-batch (a smaller
// last micro-batch: each rank at least 1 and at most its full share); pipeline
// samples add up to the global batch; each sharded block exists, has at least two owners and is
// named once; predicted memory fits each device. Throws InputError
// naming plan.source and the field.
void validate_plan(const Plan& plan, const Topology& topology, const ModelConfig& model);

}  // namespace eth
