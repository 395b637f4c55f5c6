// The 16-bit matmuls through launch.gemm16 (kernels/gpu_ops/gemm16.hpp), E = bf16 or fp16:
// activations, weights and input gradients stored in E, products accumulated in fp32, weight and bias gradients
// accumulated in fp32. Row-major buffers as column-major transposes, as in matmul.hpp:
//
//   out  (N, OC) = inp (N, C) W^T        ->  out^T  (OC, N) = W   . inp^T   gemm(T, N, OC, N, C)
//   dinp (N, C)  = g (N, OC) W           ->  dinp^T (C, N)  = W^T . g^T     gemm(N, N, C, N, OC)
//   dW   (OC, C) += g^T (OC, N) inp      ->  dW^T   (C, OC) += inp^T . g    gemm(N, T, C, OC, N)
//
// Forward fuses the bias and GELU into its one GEMM: with pre_gelu, out = GELU(inp W^T + bias)
// and pre_gelu keeps inp W^T + bias (bf16), GELU taken from the fp32 sum before it is rounded.
//
// Backward, with g = dout the gradient of inp W^T + bias. With pre_gelu, inp is GELU(pre_gelu)
// and dinp is taken on through GELU's backward in the dinp GEMM's DGELU epilogue (llm.c's
// placement): dinp = bf16(gelu'(pre_gelu) * (g W)) from the fp32 sum, as the CPU twin's
// matmul_dgelu_backward computes it. dbias is the dW GEMM's BGRADB epilogue (sum over N of g, in
// fp32); BGRADB overwrites, so it lands in scratch (OC) fp32 and one kernel adds it to dbias.
#pragma once

#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/elementwise.hpp"
#include "kernels/gpu_ops/gemm16.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

// Grid-stride over the columns: dbias[j] += partial[j].
struct AddBiasGradKernel {
  static constexpr const char* kName = "matmul16_dbias_add";
  Global<float> dbias;            // (OC) accumulated
  Global<const float> partial;    // (OC)
  int OC;
  SIMT_DEVICE void operator()(Thread& t) const {
    for (size_t j = global_index(t); j < static_cast<size_t>(OC); j += grid_stride(t)) dbias[j] += partial[j];
  }
};

template <class Launch, class E>
void matmul_forward16(Launch& launch, E* out, E* pre_gelu, const E* inp, const E* weight, const E* bias, int N,
                         int C, int OC) {
  if (N == 0 || OC == 0) return;
  Gemm16<E> g = gemm_operands(true, false, OC, N, C, weight, C, inp, C);
  g.D_16 = out, g.ldd = OC;
  g.bias = bias;
  if (pre_gelu != nullptr) {
    g.epilogue = bias ? GemmEpilogue::gelu_aux_bias : GemmEpilogue::gelu_aux;
    g.aux = pre_gelu, g.ldaux = OC;
  } else {
    g.epilogue = bias ? GemmEpilogue::bias : GemmEpilogue::none;
  }
  launch.gemm16(g);
}

template <class Launch, class E>
void matmul_backward16(Launch& launch, E* dinp, float* dweight, float* dbias, const E* dout, const E* inp,
                          const E* weight, const E* pre_gelu, int N, int C, int OC) {
  if (N == 0 || C == 0 || OC == 0) return;
  Gemm16<E> di = gemm_operands(false, false, C, N, OC, weight, C, dout, OC);
  di.D_16 = dinp, di.ldd = C;
  if (pre_gelu != nullptr) {
    di.epilogue = GemmEpilogue::dgelu;
    di.aux = const_cast<E*>(pre_gelu), di.ldaux = C;  // dgelu reads aux, never writes it
  }
  launch.gemm16(di);

  Gemm16<E> dw = gemm_operands(false, true, C, OC, N, inp, C, dout, OC);
  dw.D_fp32 = dweight, dw.ldd = C;
  dw.accumulate = true;
  if (dbias == nullptr) return launch.gemm16(dw);
  const size_t partial_bytes = matmul_backward16_scratch_bytes(static_cast<size_t>(OC), true);
  auto* partial = static_cast<float*>(launch.scratch(partial_bytes));
  dw.epilogue = GemmEpilogue::bgradb, dw.bias_grad = partial;
  launch.gemm16(dw);
  launch.kernel(AddBiasGradKernel{dbias, partial, OC}, elementwise_shape(static_cast<size_t>(OC)));
}

}  // namespace eth::kernels::gpu_ops
