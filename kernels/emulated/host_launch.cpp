#include "kernels/emulated/host_launch.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/gpu_ops/elementwise.hpp"
#include "kernels/simt/types.hpp"
#include "kernels/workspace.hpp"

namespace eth::kernels::emulated {

namespace {
constexpr std::align_val_t kHeapAlignment{256};
}  // namespace

void HostLaunch::Held::grow(size_t bytes) {
  if (bytes <= bytes_) return;
  free();
  // From the heap 256-byte aligned, as cudaMalloc's: the interpreter's counters of sectors and
  // lines per request depend on where a buffer starts.
  data_ = memory_ ? memory_->allocate(bytes) : ::operator new(bytes, kHeapAlignment);
  bytes_ = bytes;
  std::memset(data_, 0, bytes);
}

void HostLaunch::Held::free() {
  if (data_ == nullptr) return;
  if (memory_)
    memory_->release(data_);
  else
    ::operator delete(data_, kHeapAlignment);
  data_ = nullptr;
  bytes_ = 0;
}

void HostLaunch::reserve(size_t scratch_bytes, size_t sort_rows) {
  (void)sort_rows;
  scratch_.grow(scratch_bytes);
  reserved_ = true;
}

void* HostLaunch::scratch(size_t bytes) {
  if (reserved_ && bytes > scratch_.bytes())
    throw std::logic_error("HostLaunch::scratch: an op asks for " + std::to_string(bytes) + " bytes, past the " +
                           std::to_string(scratch_.bytes()) +
                           " reserved at start-up (kernels/gpu_ops/scratch.hpp: launch_scratch_bytes leaves it out)");
  scratch_.grow(bytes);
  std::memset(scratch_.data(), 0xff, bytes);  // undefined content: NaN, as the interpreter's shared memory
  return scratch_.data();
}

LibraryCounts& HostLaunch::count_call(const LibraryCall& call) {
  if (counters_) calls_.push_back(call);
  return library_[call.name];
}

void HostLaunch::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* A, int lda,
                      const float* B, int ldb, float beta, float* C, int ldc) {
  if (values_)
    cblas_sgemm(CblasColMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k,
                alpha, A, lda, B, ldb, beta, C, ldc);
  LibraryCounts& c = count_call({"cublas_sgemm", m, n, k, 4});
  const uint64_t mn = uint64_t(m) * n;
  c.calls += 1;
  c.bytes_read += 4 * (uint64_t(m) * k + uint64_t(k) * n + (beta != 0.f ? mn : 0));
  c.bytes_written += 4 * mn;
  c.flops += 2 * mn * uint64_t(k);
}

namespace {

// A stored column-major (rows, cols) 16-bit matrix with leading dimension ld, widened to fp32 with
// the same ld (exact: every bf16 and fp16 is an fp32). Rows past `rows` are not read.
template <class E>
std::vector<float> widen(const E* p, int rows, int cols, int ld) {
  std::vector<float> out(static_cast<size_t>(ld) * cols, 0.f);
  for (int j = 0; j < cols; j++)
    for (int i = 0; i < rows; i++) out[size_t(j) * ld + i] = simt::to_float(p[size_t(j) * ld + i]);
  return out;
}

}  // namespace

// Counted, then (unless values are off) the fp32 result of op(A) op(B) (+ D) in an (m, n) buffer,
// the epilogue element by element as cuBLASLt defines it (kernels/gpu_ops/gemm16.hpp), and the
// store: one rounding to E.
template <class E>
void HostLaunch::gemm16(const gpu_ops::Gemm16<E>& g) {
  using gpu_ops::GemmEpilogue;
  gpu_ops::check_gemm16(g);
  const int m = g.m, n = g.n, k = g.k;
  LibraryCounts& c = count_call({std::is_same_v<E, bf16> ? "cublaslt_matmul_bf16" : "cublaslt_matmul_fp16", m, n, k, 2});
  const bool gelu_aux = g.epilogue == GemmEpilogue::gelu_aux || g.epilogue == GemmEpilogue::gelu_aux_bias;
  const uint64_t mn = uint64_t(m) * n;
  c.calls += 1;
  c.bytes_read += 2 * (uint64_t(m) * k + uint64_t(k) * n) + (g.accumulate ? 4 * mn : 0) +
                  (gpu_ops::adds_bias(g.epilogue) ? 2 * uint64_t(m) : 0) +
                  (g.epilogue == GemmEpilogue::dgelu ? 2 * mn : 0);
  c.bytes_written += (g.D_16 ? 2 : 4) * mn + (gelu_aux ? 2 * mn : 0) +
                     (g.epilogue == GemmEpilogue::bgradb ? 4 * uint64_t(n) : 0);
  c.flops += 2 * mn * uint64_t(k);
  if (!values_) return;
  const std::vector<float> A = widen(g.A, g.trans_a ? k : m, g.trans_a ? m : k, g.lda);
  const std::vector<float> B = widen(g.B, g.trans_b ? n : k, g.trans_b ? k : n, g.ldb);
  std::vector<float> acc(size_t(m) * n, 0.f);  // (m, n), ld m
  if (g.accumulate)
    for (int j = 0; j < n; j++) std::copy_n(g.D_fp32 + size_t(j) * g.ldd, m, acc.data() + size_t(j) * m);
  cblas_sgemm(CblasColMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans, m, n, k,
              1.f, A.data(), g.lda, B.data(), g.ldb, g.accumulate ? 1.f : 0.f, acc.data(), m);

  for (int j = 0; j < n; j++) {
    for (int i = 0; i < m; i++) {
      float x = acc[size_t(j) * m + i];
      const size_t at_aux = size_t(j) * g.ldaux + i;
      if (gpu_ops::adds_bias(g.epilogue)) x += simt::to_float(g.bias[i]);
      if (gelu_aux) {
        g.aux[at_aux] = simt::from_float<E>(x);
        x = gpu_ops::gelu(x);
      }
      if (g.epilogue == GemmEpilogue::dgelu) x *= gpu_ops::gelu_grad(simt::to_float(g.aux[at_aux]));
      const size_t at = size_t(j) * g.ldd + i;
      if (g.D_16 != nullptr) g.D_16[at] = simt::from_float<E>(x);
      else g.D_fp32[at] = x;
    }
  }
  if (g.epilogue == GemmEpilogue::bgradb) {
    for (int j = 0; j < n; j++) {  // op(B)[r, j] is stored B[j, r] when trans_b, else B[r, j]
      float sum = 0.f;
      for (int r = 0; r < k; r++) sum += g.trans_b ? B[size_t(r) * g.ldb + j] : B[size_t(j) * g.ldb + r];
      g.bias_grad[j] = sum;
    }
  }
}
template void HostLaunch::gemm16<bf16>(const gpu_ops::Gemm16<bf16>& g);
template void HostLaunch::gemm16<fp16>(const gpu_ops::Gemm16<fp16>& g);

void HostLaunch::sort_pairs(const int32_t* keys_in, int32_t* keys_out, const int32_t* values_in, int32_t* values_out,
                            int n) {
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys_in[a] < keys_in[b]; });
  for (int i = 0; i < n; i++) {
    keys_out[i] = keys_in[order[i]];
    values_out[i] = values_in[order[i]];
  }
  LibraryCounts& c = count_call({"cub_sort_pairs", n, 0, 0, 8});
  c.calls += 1;
  c.bytes_read += 8 * uint64_t(n);
  c.bytes_written += 8 * uint64_t(n);
}

void HostLaunch::read_back(void* host, const void* src, size_t bytes) { std::memcpy(host, src, bytes); }

}  // namespace eth::kernels::emulated
