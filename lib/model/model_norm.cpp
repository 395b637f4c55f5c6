#include "lib/model/model_norm.hpp"

namespace eth {

void ModelNorm::forward(const NormOutput& out, kernels::ConstTensor inp, kernels::ConstTensor weight,
                        kernels::ConstTensor bias, int N) const {
  if (kind_ == NormKind::layernorm)
    backend_.layernorm_forward(out.out, out.mean, out.rstd, inp, weight, bias, N, C_);
  else
    backend_.rmsnorm_forward(out.out, out.rstd, inp, weight, N, C_, eps_);
}

void ModelNorm::residual_forward(kernels::Tensor residual, const NormOutput& out, kernels::ConstTensor a,
                                 kernels::ConstTensor b, kernels::ConstTensor weight, kernels::ConstTensor bias,
                                 int N) const {
  if (kind_ == NormKind::layernorm)
    backend_.residual_layernorm_forward(residual, out.out, out.mean, out.rstd, a, b, weight, bias, N, C_);
  else
    backend_.residual_rmsnorm_forward(residual, out.out, out.rstd, a, b, weight, N, C_, eps_);
}

void ModelNorm::backward(kernels::Tensor dinp, float* dweight, float* dbias, kernels::ConstTensor dout,
                         kernels::ConstTensor inp, kernels::ConstTensor weight, const NormOutput& saved, int N) const {
  if (kind_ == NormKind::layernorm)
    backend_.layernorm_backward(dinp, dweight, dbias, dout, inp, weight, saved.mean, saved.rstd, N, C_);
  else
    backend_.rmsnorm_backward(dinp, dweight, dout, inp, weight, saved.rstd, N, C_);
}

}  // namespace eth
