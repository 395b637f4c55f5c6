// What each GPU op takes from launch.scratch (ops.hpp), in bytes: one formula per op, which the
// op asks for and launch_scratch_bytes (below) takes the largest of, so that the scratch is sized
// once at start-up (Backend::reserve_workspace) and the memory model counts it
// (launch_workspace_bytes, kernels/workspace.hpp's second term).
// Pure arithmetic on shapes and on the grid constants that set the sizes, so that the memory
// model needs no kernel code; the ops' headers use these constants for their grids.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>

#include "kernels/workspace.hpp"

namespace eth::kernels::gpu_ops {

// Rows per chunk of the deterministic column sums (column_sums.hpp): one (chunk, columns)
// partial (two floats) per chunk.
constexpr int kRowsPerChunk = 128;
// Blocks of the sum of squares' fixed grid (optimizer.hpp): one double partial each.
constexpr int kSumBlocks = 1024;
// Rows per block of the layernorm backward (layernorm.hpp): 4 per warp, 512 blocks
// for GPT-2's B T = 16384; one (dweight, dbias) partial per block and column.
constexpr int kLayerNormBackwardRowsPerBlock = 32;

inline size_t chunks_of(size_t n, size_t per) { return (n + per - 1) / per; }

// Consecutive 256-byte aligned pieces of one launch.scratch request: add() each piece's count to
// get its byte offset, then ask for total() bytes once.
class ScratchCarver {
 public:
  template <typename T>
  size_t add(size_t count) {
    const size_t at = total_;
    total_ += (count * sizeof(T) + 255) / 256 * 256;
    return at;
  }
  size_t total() const { return total_; }

 private:
  size_t total_ = 0;
};

// add_column_sums over (N, C): the partials, (chunks, C) pairs of floats.
inline size_t column_sums_scratch_bytes(size_t N, size_t C) {
  return 2 * sizeof(float) * chunks_of(N, kRowsPerChunk) * C;
}
// The fp32 cross-entropy: each token's loss (N) in double.
inline size_t crossentropy_scratch_bytes(size_t N) { return sizeof(double) * N; }
// The embedding's backward over N rows: the sorted tokens and the row indices before and after
// sorting, (N) int32 each, at these byte offsets.
struct EncoderBackwardScratch {
  size_t keys, rows, sorted_rows, total;
  explicit EncoderBackwardScratch(size_t N) {
    ScratchCarver carve;
    keys = carve.add<int32_t>(N), rows = carve.add<int32_t>(N), sorted_rows = carve.add<int32_t>(N);
    total = carve.total();
  }
};
// The bf16 flash attention's backward: D = rowsum(dO * O), (B, NH, T) floats.
inline size_t attention_backward16_scratch_bytes(size_t B, size_t T, size_t NH) {
  return sizeof(float) * B * NH * T;
}
// The layernorm backward: each block's (dweight, dbias) partials, (blocks, C) pairs of floats,
// and the column sums' partials over those rows, at these byte offsets.
struct LayerNormBackwardScratch {
  size_t block_partials, chunk_partials, total;
  LayerNormBackwardScratch(size_t N, size_t C) {
    const size_t blocks = chunks_of(N, kLayerNormBackwardRowsPerBlock);
    ScratchCarver carve;
    block_partials = carve.add<float>(2 * blocks * C);
    chunk_partials = carve.add<float>(2 * chunks_of(blocks, kRowsPerChunk) * C);
    total = carve.total();
  }
};
inline size_t layernorm_backward_scratch_bytes(size_t N, size_t C) { return LayerNormBackwardScratch(N, C).total; }
// The bf16 matmul backward: the bias gradient's partial sums, (OC) floats, where there is a bias.
inline size_t matmul_backward16_scratch_bytes(size_t OC, bool dbias) { return dbias ? sizeof(float) * OC : 0; }
// The sum of squares: the partials and the result, in double.
inline size_t sum_of_squares_scratch_bytes() { return sizeof(double) * (kSumBlocks + 1); }

// The rows the embedding's backward sorts at most: a micro-batch's, or the gathered rows.
inline size_t sorted_rows(const StageShape& s) {
  return std::max(s.embedding ? static_cast<size_t>(s.B) * s.T : 0, s.gathered_rows);
}

// The largest launch.scratch request of the GPU ops in a step of such a stage, on either
// precision path (fp32 GPU ops and bf16 kernels alike: the larger of the two is reserved).
inline size_t launch_scratch_bytes(const StageShape& s) {
  const size_t N = static_cast<size_t>(s.B) * s.T, C = static_cast<size_t>(s.C);
  // A layer's backward ops with scratch, fp32 and bf16: the norm's partials (RMSNorm runs
  // layernorm's kernels); the matmul bias gradients (the widest: fc's, or qkv's); flash
  // attention's D. Then the head's loss (the fp32 op's token losses in double; the bf16 one's in
  // float), the embedding's sort, and the gradient norm's sum of squares.
  const size_t widest_bias = std::max(static_cast<size_t>(s.fc), s.heads.qkv_row());
  size_t bytes = std::max({column_sums_scratch_bytes(N, widest_bias), layernorm_backward_scratch_bytes(N, C),
                           matmul_backward16_scratch_bytes(widest_bias, true),
                           attention_backward16_scratch_bytes(s.B, s.T, static_cast<size_t>(s.heads.NH)),
                           sum_of_squares_scratch_bytes()});
  if (s.head) bytes = std::max(bytes, crossentropy_scratch_bytes(N));
  if (sorted_rows(s) > 0) bytes = std::max(bytes, EncoderBackwardScratch(sorted_rows(s)).total);
  return bytes;
}

// All the GPU ops hold for such a stage on `device`: the scratch, and on a GPU
// cuBLASLt's workspace and the bound on CUB's sort storage. 0 on the host.
inline size_t launch_workspace_bytes(const StageShape& s, OpsDevice device) {
  if (device == OpsDevice::host) return 0;
  const size_t held = launch_scratch_bytes(s);
  if (device == OpsDevice::interpreter) return held;  // its GEMMs and sort run on the host
  return held + kCublasWorkspaceBytes + sort_storage_bound(sorted_rows(s));
}

}  // namespace eth::kernels::gpu_ops
