// What the planner's memory model counts for each layer's attention backward state: the CPU
// backend's rule (kernels/attention_path.hpp), the (B, NH, T, T) probabilities below
// kCpuMaterialisedBelowT and lse (B, NH, T) from it on. A topology does not say which device
// types run the CPU backend; the CUDA backend keeps lse at every T, so below that T the model
// over-counts a GPU by NH (T - 1) floats per token and layer: an upper bound, exact from it on.
#pragma once

#include "kernels/attention_path.hpp"

namespace eth::planner {

inline double attention_state_floats(int B, int NH, int T) {
  return static_cast<double>(kernels::attention_saved_floats(kernels::cpu_attention_path(T), static_cast<size_t>(B),
                                                             static_cast<size_t>(NH), static_cast<size_t>(T)));
}

}  // namespace eth::planner
