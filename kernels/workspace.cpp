#include "kernels/workspace.hpp"

#include <algorithm>

#include "kernels/gpu_ops/scratch.hpp"

namespace eth::kernels {

size_t sorted_rows(const StageShape& s) {
  return std::max(s.embedding ? static_cast<size_t>(s.B) * s.T : 0, s.gathered_rows);
}

size_t launch_scratch_bytes(const StageShape& s) {
  using namespace gpu_ops;
  const size_t N = static_cast<size_t>(s.B) * s.T, C = static_cast<size_t>(s.C);
  // A layer's backward ops with scratch, fp32 and bf16: layernorm's column sums and its one-launch
  // bf16 form; the matmul bias gradients (the widest is fc's, 4C); flash attention's D. Then the
  // head's fp32 loss, the embedding's sort, and the gradient norm's sum of squares.
  size_t bytes = std::max({column_sums_scratch_bytes(N, C), column_sums_scratch_bytes(N, 4 * C),
                           layernorm_backward_bf16_scratch_bytes(N, C), matmul_backward_bf16_scratch_bytes(4 * C, true),
                           attention_backward_bf16_scratch_bytes(s.B, s.T, s.NH), sum_of_squares_scratch_bytes()});
  if (s.head) bytes = std::max(bytes, crossentropy_scratch_bytes(N));
  if (sorted_rows(s) > 0) bytes = std::max(bytes, EncoderBackwardScratch(sorted_rows(s)).total);
  return bytes;
}

size_t launch_workspace_bytes(const StageShape& s, OpsDevice device) {
  if (device == OpsDevice::host) return 0;
  const size_t held = launch_scratch_bytes(s) + sizeof(unsigned) * kLaunchCounters;
  if (device == OpsDevice::interpreter) return held;  // its GEMMs and sort run on the host
  return held + kCublasWorkspaceBytes + sort_storage_bound(sorted_rows(s));
}

}  // namespace eth::kernels
