// Which attention path the planner's memory model (stage_memory, lib/plan/memory_model.hpp)
// counts each layer's backward state for: the CPU backend's rule (kernels/attention_path.hpp),
// the (B, NH, T, T) probabilities below kCpuMaterialisedBelowT and lse (B, NH, T) from it on.
// A topology does not say which device types run the CPU backend; the CUDA backend keeps lse at
// every T, so below that T the model over-counts a GPU by NH (T - 1) floats per token and layer:
// an upper bound, exact from it on.
#pragma once

#include "kernels/attention_path.hpp"

namespace eth::planner {

inline kernels::AttentionPath planner_attention_path(int T) { return kernels::cpu_attention_path(T); }

}  // namespace eth::planner
