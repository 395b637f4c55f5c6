#include "kernels/backend.hpp"

namespace eth::kernels {

// The fused ops as the two ops they fuse: a backend with a fused kernel overrides them.

void Backend::matmul_gelu_forward(Tensor out, Tensor pre_gelu, ConstTensor inp, ConstTensor weight, ConstTensor bias,
                                  int N, int C, int OC) {
  matmul_forward(pre_gelu, inp, weight, bias, N, C, OC);
  gelu_forward(out, pre_gelu, static_cast<size_t>(N) * OC);
}

void Backend::matmul_dgelu_backward(Tensor dpre_gelu, float* dweight, float* dbias, ConstTensor dout, ConstTensor inp,
                                    ConstTensor weight, ConstTensor pre_gelu, int N, int C, int OC) {
  matmul_backward(dpre_gelu, dweight, dbias, dout, inp, weight, N, C, OC);
  gelu_backward(dpre_gelu, pre_gelu, dpre_gelu, static_cast<size_t>(N) * C);
}

void Backend::residual_layernorm_forward(Tensor residual, Tensor out, float* mean, float* rstd, ConstTensor a,
                                         ConstTensor b, ConstTensor weight, ConstTensor bias, int N, int C) {
  residual_forward(residual, a, b, static_cast<size_t>(N) * C);
  layernorm_forward(out, mean, rstd, residual, weight, bias, N, C);
}

void Backend::residual_rmsnorm_forward(Tensor residual, Tensor out, float* rstd, ConstTensor a, ConstTensor b,
                                       ConstTensor weight, int N, int C, float eps) {
  residual_forward(residual, a, b, static_cast<size_t>(N) * C);
  rmsnorm_forward(out, rstd, residual, weight, N, C, eps);
}

}  // namespace eth::kernels
