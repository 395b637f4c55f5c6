// Which causal-attention kernel a backend runs at a sequence length, and so what a layer keeps
// for attention backward. The stage sizes that buffer from its backend's answer
// (Backend::attention_path) and the memory models count it with the same rule, so the planner,
// the runtime's memory check and the allocator agree to the float.
#pragma once

#include <cstddef>

namespace eth::kernels {

enum class AttentionPath {
  blocked,       // online softmax; keeps lse (B, NH, T), each row's log-sum-exp
  materialised,  // keeps the softmax probabilities (B, NH, T, T)
};

// Below this T the CPU backend runs the materialised kernels. bench_attention on this project's
// CPU machine (2 Zen3 cores, GPT-2 124M shapes, three runs; docs/results.md, "Attention stores
// no T x T matrix") measured them faster in every run up to T = 64, one tile of the blocked
// kernels, and slower in every run from T = 96; between, the runs disagreed, and there the
// blocked kernels' smaller state decides. The CUDA backend always runs the blocked kernel.
constexpr int kCpuMaterialisedBelowT = 65;

inline AttentionPath cpu_attention_path(int T) {
  return T < kCpuMaterialisedBelowT ? AttentionPath::materialised : AttentionPath::blocked;
}

// Floats one layer keeps for attention backward, for B samples of T tokens and NH heads.
inline size_t attention_saved_floats(AttentionPath path, size_t B, size_t NH, size_t T) {
  return B * NH * T * (path == AttentionPath::materialised ? T : 1);
}

}  // namespace eth::kernels
