// What each GPU op takes from launch.scratch (ops.hpp), in bytes: one formula per op, which the
// op asks for and launch_scratch_bytes (kernels/workspace.cpp) takes the largest of, so that the
// scratch is sized once at start-up (Backend::reserve_workspace) and the memory model counts it.
// Pure arithmetic on shapes and on the grid constants that set the sizes, so that the memory
// model needs no kernel code; the ops' headers use these constants for their grids.
#pragma once

#include <cstddef>
#include <cstdint>

namespace eth::kernels::gpu_ops {

// Rows per chunk of the deterministic column sums (column_sums.hpp): one (chunk, columns)
// partial (two floats) per chunk.
constexpr int kRowsPerChunk = 128;
// Blocks of the sum of squares' fixed grid (optimizer.hpp): one double partial each.
constexpr int kSumBlocks = 1024;
// Rows per block of the one-launch bf16 layernorm backward (layernorm_bf16.hpp): 4 per warp,
// 128 blocks for GPT-2's B T = 4096; one (dweight, dbias) partial per block and column.
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
inline size_t attention_backward_bf16_scratch_bytes(size_t B, size_t T, size_t NH) {
  return sizeof(float) * B * NH * T;
}
// The bf16 layernorm backward: (blocks, C) pairs of floats.
inline size_t layernorm_backward_bf16_scratch_bytes(size_t N, size_t C) {
  return 2 * sizeof(float) * chunks_of(N, kLayerNormBackwardRowsPerBlock) * C;
}
// The bf16 matmul backward: the bias gradient's partial sums, (OC) floats, where there is a bias.
inline size_t matmul_backward_bf16_scratch_bytes(size_t OC, bool dbias) { return dbias ? sizeof(float) * OC : 0; }
// The sum of squares: the partials and the result, in double.
inline size_t sum_of_squares_scratch_bytes() { return sizeof(double) * (kSumBlocks + 1); }

}  // namespace eth::kernels::gpu_ops
