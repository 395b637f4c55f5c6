// Fused softmax + cross-entropy, one block per row of logits, probabilities never stored: pass 1
// finds the row's max, pass 2 sums exp(x - max) (in double, as the CPU twin), pass 3 (training
// only) overwrites the row with dlogits = scale/T * (softmax - onehot(target)), zero in the padded
// columns. A second kernel averages each sample's T token losses in order, in double.
#include "kernels/cuda/cuda_ops.cuh"

namespace eth::kernels::cuda {
namespace {

constexpr int kThreads = 512;

__global__ void crossentropy_rows_kernel(double* token_loss, float* logits, const int32_t* targets, int T, int V,
                                         int Vp, float dlogits_scale) {
  __shared__ float shared_f[kWarp];
  __shared__ double shared_d[kWarp];
  const size_t n = blockIdx.x;
  float* row = logits + n * Vp;
  const int target = targets[n];

  float maxval = -INFINITY;
  for (int v = threadIdx.x; v < V; v += blockDim.x) maxval = fmaxf(maxval, row[v]);
  maxval = block_max(maxval, shared_f);
  double sum = 0.0;
  for (int v = threadIdx.x; v < V; v += blockDim.x) sum += expf(row[v] - maxval);
  sum = block_sum(sum, shared_d);
  // Every thread has read row[target] into the max and the sum before any thread writes (the
  // block reductions end with __syncthreads), so reading it here is safe.
  if (threadIdx.x == 0) token_loss[n] = log(sum) - static_cast<double>(row[target] - maxval);
  if (dlogits_scale == 0.f) return;
  __syncthreads();  // row[target] is read above before the gradient pass overwrites it

  const float g = dlogits_scale / static_cast<float>(T);
  const float inv_sum = static_cast<float>(1.0 / sum);
  for (int v = threadIdx.x; v < Vp; v += blockDim.x) {
    float d = 0.f;
    if (v < V) {
      d = g * expf(row[v] - maxval) * inv_sum;
      if (v == target) d -= g;
    }
    row[v] = d;
  }
}

// sample_losses[b] = mean over t of token_loss[b, t], summed in t order.
__global__ void sample_mean_kernel(float* sample_losses, const double* token_loss, int B, int T) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= B) return;
  double s = 0.0;
  for (int t = 0; t < T; t++) s += token_loss[static_cast<size_t>(b) * T + t];
  sample_losses[b] = static_cast<float>(s / T);
}

}  // namespace

void crossentropy_forward_backward(cudaStream_t stream, Scratch& scratch, float* sample_losses,
                                   float* logits, const int32_t* targets, int B, int T, int V, int Vp,
                                   float dlogits_scale) {
  const size_t N = static_cast<size_t>(B) * T;
  if (N == 0) return;
  auto* token_loss = static_cast<double*>(scratch.get(sizeof(double) * N));  // (B, T)
  crossentropy_rows_kernel<<<static_cast<unsigned>(N), kThreads, 0, stream>>>(token_loss, logits, targets, T, V, Vp,
                                                                               dlogits_scale);
  CUDA_CHECK_LAUNCH();
  sample_mean_kernel<<<static_cast<unsigned>(ceil_div(B, 128)), 128, 0, stream>>>(sample_losses, token_loss, B, T);
  CUDA_CHECK_LAUNCH();
}

}  // namespace eth::kernels::cuda
