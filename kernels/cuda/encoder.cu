// Token + position embedding, forward and a deterministic backward.
//
// Backward without atomics: a token may repeat in the batch, so the positions are first sorted
// by token with a stable radix sort (positions stay ascending inside a token's run); then one
// block per run adds the run's rows of dout into its dwte row, in position order, starting from
// the accumulated value. That is exactly the CPU twin's order of additions, so dwte and dwpe
// match it bit for bit.
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/cuda_ops.cuh"

namespace eth::kernels::cuda {
namespace {

__global__ void encoder_forward_kernel(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                                       int T, int C, size_t total) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x) {
    const size_t row = i / C;  // b * T + t
    const size_t c = i % C;
    const size_t t = row % T;
    out[i] = wte[static_cast<size_t>(tokens[row]) * C + c] + wpe[t * C + c];
  }
}

// One thread per (t, c) of dwpe: adds over b in order, as the CPU twin does.
__global__ void wpe_backward_kernel(float* dwpe, const float* dout, int B, int T, int C) {
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i >= static_cast<size_t>(T) * C) return;
  const size_t t = i / C, c = i % C;
  float acc = dwpe[i];
  for (int b = 0; b < B; b++) acc += dout[(static_cast<size_t>(b) * T + t) * C + c];
  dwpe[i] = acc;
}

__global__ void iota_kernel(int32_t* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = i;
}

// Block i handles sorted entry i when it starts a run of equal tokens; the others return.
__global__ void wte_backward_kernel(float* dwte, const float* dout, const int32_t* sorted_tokens,
                                    const int32_t* sorted_rows, int N, int C) {
  const int i = blockIdx.x;
  const int32_t token = sorted_tokens[i];
  if (i > 0 && sorted_tokens[i - 1] == token) return;
  float* dst = dwte + static_cast<size_t>(token) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = dst[c];
    for (int j = i; j < N && sorted_tokens[j] == token; j++) acc += dout[static_cast<size_t>(sorted_rows[j]) * C + c];
    dst[c] = acc;
  }
}

}  // namespace

void encoder_forward(cudaStream_t stream, float* out, const int32_t* tokens, const float* wte,
                     const float* wpe, int B, int T, int C) {
  const size_t total = static_cast<size_t>(B) * T * C;
  encoder_forward_kernel<<<grid_for(total, 256), 256, 0, stream>>>(out, tokens, wte, wpe, T, C, total);
  CUDA_CHECK_LAUNCH();
}

void encoder_backward(cudaStream_t stream, Scratch& scratch, float* dwte, float* dwpe, const float* dout,
                      const int32_t* tokens, int B, int T, int C) {
  const int N = B * T;
  if (N == 0 || C == 0) return;
  const size_t TC = static_cast<size_t>(T) * C;
  if (dwpe) {
    wpe_backward_kernel<<<static_cast<unsigned>(ceil_div(TC, 256)), 256, 0, stream>>>(dwpe, dout, B, T, C);
    CUDA_CHECK_LAUNCH();
  }
  if (!dwte) return;

  // Scratch: sorted tokens, row indices before and after sorting, and CUB's temporary storage.
  size_t sort_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const int32_t*>(nullptr),
                                             static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                             static_cast<int32_t*>(nullptr), N, 0, 32, stream));
  ScratchCarver carve;
  const size_t at_keys = carve.add<int32_t>(N), at_rows = carve.add<int32_t>(N),
               at_sorted_rows = carve.add<int32_t>(N), at_temp = carve.add<char>(sort_bytes);
  char* base = static_cast<char*>(scratch.get(carve.total()));
  auto* sorted_tokens = reinterpret_cast<int32_t*>(base + at_keys);
  auto* rows = reinterpret_cast<int32_t*>(base + at_rows);
  auto* sorted_rows = reinterpret_cast<int32_t*>(base + at_sorted_rows);

  iota_kernel<<<static_cast<unsigned>(ceil_div(N, 256)), 256, 0, stream>>>(rows, N);
  CUDA_CHECK_LAUNCH();
  // Stable: rows of one token keep their ascending order. Tokens are non-negative, so all 32
  // bits order them correctly (the sign bit is 0 for all).
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(base + at_temp, sort_bytes, tokens, sorted_tokens, rows,
                                             sorted_rows, N, 0, 32, stream));
  wte_backward_kernel<<<static_cast<unsigned>(N), 256, 0, stream>>>(dwte, dout, sorted_tokens, sorted_rows, N, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace eth::kernels::cuda
