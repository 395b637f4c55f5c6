// How much arithmetic the job's devices could do: MFU's denominator (model FLOPs utilisation, as
// llm.c and nanoGPT report it). Its numerator, the FLOPs a token costs, is the model's:
// lib/model/model_tensors.hpp.
#pragma once

#include "lib/model/model_tensors.hpp"
#include "lib/plan/precision_paths.hpp"
#include "lib/plan/topology.hpp"

namespace eth {

// FLOP/s the job's devices reach at most: each rank's path peak (PrecisionPath::peak_tflops: bf16
// tensor cores where its device type computes on them, fp32 where bf16 runs in fp32 arithmetic),
// summed over every rank of `topology`, idle ones too: they are part of the job.
double peak_flops(const Topology& topology, const PrecisionPaths& paths);

}  // namespace eth
