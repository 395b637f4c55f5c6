// Deterministic sums over the rows of an (N, C) computation, for parameter gradients that add
// up every row: dbias of a matmul, dweight and dbias of a layernorm. No atomics: rows are cut
// into fixed chunks of kRowsPerChunk, each (chunk, 32 columns) block writes its partial sums, and
// one thread per column adds the partials in chunk order. The chunking depends on N alone, so a
// result never depends on the device or on scheduling.
#pragma once

#include <stdexcept>

#include "kernels/cuda/cuda_common.cuh"

namespace eth::kernels::cuda {

constexpr int kRowsPerChunk = 128;
constexpr int kColumnTile = 32;  // columns per block: one warp reads 32 consecutive floats
constexpr int kRowLanes = 8;     // rows read at once by a block

// Term: a device functor, float2 operator()(size_t row, int col): two quantities summed at once
// (the second is ignored where only one is wanted).
template <typename Term>
__global__ void column_partials_kernel(float2* partials /* (chunks, C) */, Term term, int N, int C) {
  __shared__ float2 tile[kRowLanes][kColumnTile];
  const int c = blockIdx.x * kColumnTile + threadIdx.x;
  const int chunk = blockIdx.y;
  const int begin = chunk * kRowsPerChunk;
  const int end = min(N, begin + kRowsPerChunk);
  float2 acc = make_float2(0.f, 0.f);
  if (c < C) {
    for (int n = begin + static_cast<int>(threadIdx.y); n < end; n += kRowLanes) {
      const float2 v = term(static_cast<size_t>(n), c);
      acc.x += v.x;
      acc.y += v.y;
    }
  }
  tile[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float2 sum = tile[0][threadIdx.x];
    for (int r = 1; r < kRowLanes; r++) {
      sum.x += tile[r][threadIdx.x].x;
      sum.y += tile[r][threadIdx.x].y;
    }
    partials[static_cast<size_t>(chunk) * C + c] = sum;
  }
}

// dst_x[c] += sum of the partials' x; dst_y likewise with y, unless it is null. (A template, so
// that every file including this header shares one definition.)
template <int kUnused = 0>
__global__ void column_finish_kernel(float* dst_x, float* dst_y, const float2* partials, int chunks, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float2 sum = make_float2(0.f, 0.f);
  for (int k = 0; k < chunks; k++) {
    const float2 p = partials[static_cast<size_t>(k) * C + c];
    sum.x += p.x;
    sum.y += p.y;
  }
  dst_x[c] += sum.x;
  if (dst_y != nullptr) dst_y[c] += sum.y;
}

template <typename Term>
void add_column_sums(cudaStream_t stream, Scratch& scratch, float* dst_x, float* dst_y, Term term, int N, int C) {
  const int chunks = static_cast<int>(ceil_div(static_cast<size_t>(N), kRowsPerChunk));
  if (chunks > 65535) throw std::invalid_argument("column sums: more than 65535 * 128 rows");  // gridDim.y
  auto* partials = static_cast<float2*>(scratch.get(sizeof(float2) * static_cast<size_t>(chunks) * C));
  const dim3 grid(static_cast<unsigned>(ceil_div(C, kColumnTile)), static_cast<unsigned>(chunks));
  column_partials_kernel<<<grid, dim3(kColumnTile, kRowLanes), 0, stream>>>(partials, term, N, C);
  CUDA_CHECK_LAUNCH();
  column_finish_kernel<><<<static_cast<unsigned>(ceil_div(C, 256)), 256, 0, stream>>>(dst_x, dst_y, partials, chunks, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace eth::kernels::cuda
