// LayerNorm over the C channels of each row, eps 1e-5. One warp per row; row statistics are
// accumulated in double like the CPU twin (the kernels are memory-bound, so it costs nothing),
// with the variance in two passes. dweight and dbias go through the deterministic column sums.
#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/cuda_ops.cuh"

namespace eth::kernels::cuda {
namespace {

constexpr int kRowsPerBlock = 8;  // warps per block, one row each
constexpr double kLayerNormEps = 1e-5;

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp,
                                         const float* weight, const float* bias, int N, int C) {
  const int lane = threadIdx.x % kWarp;
  const int n = blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp;
  if (n >= N) return;
  const float* x = inp + static_cast<size_t>(n) * C;
  double sum = 0.0;
  for (int c = lane; c < C; c += kWarp) sum += x[c];
  const double m = warp_sum(sum) / C;
  double var = 0.0;
  for (int c = lane; c < C; c += kWarp) {
    const double d = x[c] - m;
    var += d * d;
  }
  const double s = 1.0 / sqrt(warp_sum(var) / C + kLayerNormEps);
  float* o = out + static_cast<size_t>(n) * C;
  for (int c = lane; c < C; c += kWarp) o[c] = static_cast<float>((x[c] - m) * s) * weight[c] + bias[c];
  if (lane == 0) {
    mean[n] = static_cast<float>(m);
    rstd[n] = static_cast<float>(s);
  }
}

// dinp += (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) * rstd, with dnorm = weight * dout.
__global__ void layernorm_backward_kernel(float* dinp, const float* dout, const float* inp, const float* weight,
                                          const float* mean, const float* rstd, int N, int C) {
  const int lane = threadIdx.x % kWarp;
  const int n = blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp;
  if (n >= N) return;
  const float* x = inp + static_cast<size_t>(n) * C;
  const float* d = dout + static_cast<size_t>(n) * C;
  const float m = mean[n];
  const double s = rstd[n];
  double dnorm_mean = 0.0, dnorm_norm_mean = 0.0;
  for (int c = lane; c < C; c += kWarp) {
    const double norm = (x[c] - m) * s;  // x - mean in float, as in the CPU twin
    const double dnorm = static_cast<double>(weight[c]) * d[c];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * norm;
  }
  dnorm_mean = warp_sum(dnorm_mean) / C;
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / C;
  float* dx = dinp + static_cast<size_t>(n) * C;
  for (int c = lane; c < C; c += kWarp) {
    const double norm = (x[c] - m) * s;
    const double dnorm = static_cast<double>(weight[c]) * d[c];
    dx[c] += static_cast<float>((dnorm - dnorm_mean - norm * dnorm_norm_mean) * s);
  }
}

// The two per-row terms of dweight and dbias.
struct LayerNormParamTerm {
  const float* dout;
  const float* inp;
  const float* mean;
  const float* rstd;
  int C;
  __device__ float2 operator()(size_t n, int c) const {
    const size_t i = n * C + c;
    return make_float2((inp[i] - mean[n]) * rstd[n] * dout[i], dout[i]);
  }
};

}  // namespace

void layernorm_forward(cudaStream_t stream, float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int N, int C) {
  if (N == 0) return;
  const unsigned blocks = static_cast<unsigned>(ceil_div(N, kRowsPerBlock));
  layernorm_forward_kernel<<<blocks, kRowsPerBlock * kWarp, 0, stream>>>(out, mean, rstd, inp, weight, bias, N, C);
  CUDA_CHECK_LAUNCH();
}

void layernorm_backward(cudaStream_t stream, Scratch& scratch, float* dinp, float* dweight, float* dbias,
                        const float* dout, const float* inp, const float* weight, const float* mean,
                        const float* rstd, int N, int C) {
  if (N == 0 || C == 0) return;
  const unsigned blocks = static_cast<unsigned>(ceil_div(N, kRowsPerBlock));
  layernorm_backward_kernel<<<blocks, kRowsPerBlock * kWarp, 0, stream>>>(dinp, dout, inp, weight, mean, rstd, N, C);
  CUDA_CHECK_LAUNCH();
  add_column_sums(stream, scratch, dweight, dbias, LayerNormParamTerm{dout, inp, mean, rstd, C}, N, C);
}

}  // namespace eth::kernels::cuda
