// One 16-bit GEMM with a fused epilogue: the plain data of launch.gemm16 (kernels/gpu_ops/ops.hpp),
// cuBLASLt's view of it, for E = bf16 or fp16 (the operands' format; "bf16" below stands for E).
// Column-major, as cuBLAS: op(A) is (m, k), op(B) is (k, n), D is (m, n),
//
//   D = epilogue(op(A) op(B) [+ D])     accumulated in fp32 whatever D's type
//
// A and B are bf16; D is bf16 (overwritten: rounded once, after the epilogue) or fp32
// (overwritten, or accumulated with beta = 1: the parameter gradients). Each epilogue is one of
// cuBLASLt's (cublasLtEpilogue_t, /usr/local/cuda/include/cublasLt.h, CUDA 13.0), applied to the
// fp32 result before it is stored:
//
//   none           CUBLASLT_EPILOGUE_DEFAULT
//   bias           CUBLASLT_EPILOGUE_BIAS           x += bias[i]  (bias (m), bf16: D's type, so D bf16)
//   gelu_aux       CUBLASLT_EPILOGUE_GELU_AUX       aux[i, j] = bf16(x); x = gelu(x)
//   gelu_aux_bias  CUBLASLT_EPILOGUE_GELU_AUX_BIAS  x += bias[i]; aux[i, j] = bf16(x); x = gelu(x)
//   dgelu          CUBLASLT_EPILOGUE_DGELU          x *= gelu'(aux[i, j])  (aux read, bf16)
//   bgradb         CUBLASLT_EPILOGUE_BGRADB         bias_grad[j] = sum over k of op(B)[k, j]
//
// where gelu is GPT-2's tanh approximation (kernels/gpu_ops/elementwise.hpp's expressions).
// What cuBLASLt requires, and check_gemm16 checks so that the host twin refuses what the GPU
// would (cublasLt.h, CUBLASLT_MATMUL_DESC_* comments):
//   - the bias has D's row count m, packed, and by default D's type: bf16, as our bias copies are.
//   - the GELU aux matrix (pre-activation) has D's type, bf16, and a leading dimension divisible
//     by 8 and at least m (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD).
//   - a bias gradient has C's type (fp32 here) and is stored, not added: BGRADB overwrites
//     bias_grad whatever beta is, so an accumulated dbias takes it in scratch and adds it
//     (kernels/gpu_ops/matmul16.hpp).
// DGELU_BGRAD is left out on purpose: its bias gradient would take D's type, bf16, and the
// precision rule keeps parameter gradients in fp32.
#pragma once

#include <stdexcept>
#include <string>

#include "kernels/bf16.hpp"
#include "kernels/fp16.hpp"

namespace eth::kernels::gpu_ops {

enum class GemmEpilogue { none, bias, gelu_aux, gelu_aux_bias, dgelu, bgradb };

template <class E>
struct Gemm16 {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  const E* A = nullptr;       // (m, k) after op, stored (trans_a ? k : m, trans_a ? m : k), ld lda
  int lda = 0;
  const E* B = nullptr;       // (k, n) after op, stored (trans_b ? n : k, trans_b ? k : n), ld ldb
  int ldb = 0;
  E* D_16 = nullptr;          // (m, n), ld ldd: exactly one of D_16, D_fp32
  float* D_fp32 = nullptr;
  int ldd = 0;
  bool accumulate = false;    // D_fp32 += op(A) op(B) (beta 1), else overwritten (beta 0)
  GemmEpilogue epilogue = GemmEpilogue::none;
  const E* bias = nullptr;    // (m): bias, gelu_aux_bias
  E* aux = nullptr;           // (m, n), ld ldaux: written by gelu_aux(_bias), read by dgelu
  int ldaux = 0;
  float* bias_grad = nullptr; // (n), overwritten: bgradb
};
using GemmBf16 = Gemm16<bf16>;

// A GEMM's operands in cublasLtMatmul's argument order; D and the epilogue are set after.
template <class E>
Gemm16<E> gemm_operands(bool trans_a, bool trans_b, int m, int n, int k, const E* A, int lda, const E* B, int ldb) {
  Gemm16<E> g;
  g.trans_a = trans_a, g.trans_b = trans_b;
  g.m = m, g.n = n, g.k = k;
  g.A = A, g.lda = lda;
  g.B = B, g.ldb = ldb;
  return g;
}

inline bool adds_bias(GemmEpilogue e) { return e == GemmEpilogue::bias || e == GemmEpilogue::gelu_aux_bias; }
inline bool uses_aux(GemmEpilogue e) {
  return e == GemmEpilogue::gelu_aux || e == GemmEpilogue::gelu_aux_bias || e == GemmEpilogue::dgelu;
}

// Throws std::invalid_argument where g breaks the contract above (both Launches call it first).
template <class E>
void check_gemm16(const Gemm16<E>& g) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("gemm16: " + what); };
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) fail("m, n and k must be positive");
  if ((g.D_16 == nullptr) == (g.D_fp32 == nullptr)) fail("exactly one of D_16 and D_fp32");
  if (g.lda < (g.trans_a ? g.k : g.m) || g.ldb < (g.trans_b ? g.n : g.k) || g.ldd < g.m)
    fail("a leading dimension is less than its matrix's rows");
  if (g.accumulate && g.D_fp32 == nullptr) fail("accumulate needs an fp32 D");
  if ((adds_bias(g.epilogue) || uses_aux(g.epilogue)) && (g.D_16 == nullptr || g.accumulate))
    fail("bias and GELU epilogues take a 16-bit D, overwritten");
  if (adds_bias(g.epilogue) != (g.bias != nullptr)) fail("bias given without a bias epilogue, or missing");
  if (uses_aux(g.epilogue) != (g.aux != nullptr)) fail("aux given without a GELU epilogue, or missing");
  if (uses_aux(g.epilogue) && (g.ldaux < g.m || g.ldaux % 8 != 0))
    fail("the aux leading dimension must be at least m and divisible by 8 (cuBLASLt)");
  if ((g.epilogue == GemmEpilogue::bgradb) != (g.bias_grad != nullptr))
    fail("bias_grad given without bgradb, or missing");
  if (g.epilogue == GemmEpilogue::bgradb && g.D_fp32 == nullptr) fail("bgradb takes an fp32 D (its gradient's type)");
}

}  // namespace eth::kernels::gpu_ops
