// eth_profile's measurement: times the project's own kernels (eth::Stage on a backend) for the
// embedding, one transformer layer and the head + loss, forward and backward, per micro-batch
// size, each the time per run of several runs back to back. Per-kind costs are differences of three one-layer
// stages of a 3-layer copy of the model: first (embedding + layer), middle (layer), last
// (layer + head); a difference below zero (noise) is clamped to zero.
//
// Under mpirun every rank measures at once, in lockstep: each timed loop starts after a barrier
// on `ranks`, so that every run sees the contention of the node's other ranks doing the same work
// (memory bandwidth and caches; the cores themselves where ranks outnumber them), as they do in
// training; the profile holds the loop time of the slowest rank per run. One process
// (MPI_COMM_SELF) measures the device alone.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "lib/planner/cost_model.hpp"
#include "lib/planner/micro_batches.hpp"

namespace eth::planner {

struct MeasureOptions {
  std::vector<int> micro_batches = kDefaultMicroBatches;
  int seq_len = 64;
  int repetitions = 5;
};

// The profile of `device_type` on `backend`, which computes on `path`: the profile records the
// path it measured (fp32 arithmetic where a bf16 path ran without bf16 kernels).
Profile measure_profile(kernels::Backend& backend, const kernels::PrecisionPath& path, const ModelConfig& model,
                        const std::string& device_type, const MeasureOptions& options, MPI_Comm ranks);

}  // namespace eth::planner
