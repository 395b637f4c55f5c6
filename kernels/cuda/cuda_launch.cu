// CudaLaunch's library calls, in one translation unit so that CUB's sort kernels are compiled once.
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/workspace.hpp"

namespace eth::kernels::cuda {
namespace {

// The largest power of two, up to 256, that divides a pointer's address: what cuBLASLt's
// algorithms differ in requiring of it (0 for none).
int64_t alignment(const void* p) {
  const auto a = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p));
  return p == nullptr ? 0 : std::min<int64_t>(256, a & -a);
}

cublasLtEpilogue_t lt_epilogue(gpu_ops::GemmEpilogue e) {
  using gpu_ops::GemmEpilogue;
  switch (e) {
    case GemmEpilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::gelu_aux: return CUBLASLT_EPILOGUE_GELU_AUX;
    case GemmEpilogue::gelu_aux_bias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case GemmEpilogue::dgelu: return CUBLASLT_EPILOGUE_DGELU;
    case GemmEpilogue::bgradb: return CUBLASLT_EPILOGUE_BGRADB;
  }
  throw std::logic_error("gemm16: unknown epilogue");
}

// One attribute of a matmul descriptor, its size from its type; the caller checks the status, so
// that a failure names the caller's line.
template <typename T>
cublasStatus_t set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  return cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value);
}

}  // namespace

CudaLaunch::CudaLaunch(cudaStream_t stream, cublasHandle_t cublas)
    : stream_(stream), cublas_(cublas), scratch_(stream), sort_scratch_(stream) {
  CUBLAS_CHECK(cublasLtCreate(&cublaslt_));
  CUDA_CHECK(cudaMalloc(&lt_workspace_, kCublasWorkspaceBytes));
  // cuBLAS (the fp32 GEMMs) shares it, on the same stream, rather than allocating its own on first use.
  if (cublas_ != nullptr) CUBLAS_CHECK(cublasSetWorkspace(cublas_, lt_workspace_, kCublasWorkspaceBytes));
  int device = 0, optin = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  max_shared_bytes_ = static_cast<size_t>(optin);
}

size_t CudaLaunch::within_reserve(const char* what, size_t asked, size_t held) const {
  if (reserved_ && asked > held)
    throw std::logic_error("CudaLaunch: an op asks for " + std::to_string(asked) + " " + what + ", past the " +
                           std::to_string(held) + " reserved at start-up (gpu_ops/scratch.hpp: launch_scratch_bytes leaves it out)");
  return asked;
}

void CudaLaunch::reserve(size_t scratch_bytes, size_t sort_rows) {
  scratch_.get(scratch_bytes);
  if (sort_rows > 0) {
    size_t bytes = 0;
    const int n = static_cast<int>(sort_rows);
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const int32_t*>(nullptr),
                                               static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                               static_cast<int32_t*>(nullptr), n, 0, 32, stream_));
    if (bytes > sort_storage_bound(sort_rows))  // the memory model counts the bound
      throw std::logic_error("CudaLaunch: CUB asks for " + std::to_string(bytes) + " bytes to sort " +
                             std::to_string(sort_rows) + " pairs, past kernels/workspace.hpp's sort_storage_bound (" +
                             std::to_string(sort_storage_bound(sort_rows)) + ")");
    sort_scratch_.get(bytes);
  }
  reserved_ = true;
}

CudaLaunch::~CudaLaunch() {
  // Work still queued may use the workspace.
  cudaStreamSynchronize(stream_);
  cudaFree(lt_workspace_);
  cublasLtDestroy(cublaslt_);
}

// The descriptors of one gemm16 shape and the algorithm the heuristic chose for it, made once and
// kept until the launch ends (host objects: creating them allocates no device memory).
struct CudaLaunch::LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// The contract's column-major view maps one to one onto cuBLASLt's: A and B bf16 or fp16 as stored,
// C = D (beta 1 accumulates in place), fp32 compute and scale. What the heuristic's answer depends
// on is the key: the type, transposes, sizes, leading dimensions, D's type, the epilogue and its
// input's leading dimension, and the pointers' alignments; the pointers of the bias and of the
// epilogue's input are set on each call.
namespace {
// The pointers of the bias (or the bias gradient) and of the epilogue's input, which change from
// call to call of a shape: set on the descriptor each time.
template <class E>
cublasStatus_t set_pointers(cublasLtMatmulDesc_t op, const gpu_ops::Gemm16<E>& g) {
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  if (gpu_ops::adds_bias(g.epilogue))
    status = set(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(g.bias));
  if (g.epilogue == gpu_ops::GemmEpilogue::bgradb)
    status = set(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<void*>(g.bias_grad));
  if (status == CUBLAS_STATUS_SUCCESS && gpu_ops::uses_aux(g.epilogue))
    status = set(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, static_cast<void*>(g.aux));
  return status;
}
}  // namespace

template <class E>
CudaLaunch::LtPlan& CudaLaunch::lt_plan(const gpu_ops::Gemm16<E>& g) {
  const void* bias = g.bias ? static_cast<const void*>(g.bias) : static_cast<const void*>(g.bias_grad);
  const void* d_pointer = g.D_16 ? static_cast<const void*>(g.D_16) : static_cast<const void*>(g.D_fp32);
  const LtKey key{std::is_same_v<E, bf16>, g.trans_a, g.trans_b, g.m, g.n, g.k, g.lda, g.ldb, g.ldd, g.D_16 != nullptr,
                  static_cast<int64_t>(g.epilogue), g.ldaux, alignment(g.A), alignment(g.B), alignment(d_pointer),
                  512 * alignment(bias) + alignment(g.aux)};
  std::unique_ptr<LtPlan>& slot = lt_plans_[key];
  if (slot) return *slot;
  auto plan = std::make_unique<LtPlan>();
  const cudaDataType_t half = std::is_same_v<E, bf16> ? CUDA_R_16BF : CUDA_R_16F;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CUBLAS_CHECK(set(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N));
  CUBLAS_CHECK(set(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N));
  CUBLAS_CHECK(set(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(g.epilogue)));
  if (gpu_ops::adds_bias(g.epilogue))  // the bias in D's type, E: cuBLASLt's default, said explicitly
    CUBLAS_CHECK(set(plan->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(half)));
  if (g.epilogue == gpu_ops::GemmEpilogue::bgradb)  // the bias gradient in C's type, fp32
    CUBLAS_CHECK(set(plan->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(CUDA_R_32F)));
  if (gpu_ops::uses_aux(g.epilogue)) {
    CUBLAS_CHECK(set(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, static_cast<int64_t>(g.ldaux)));
    CUBLAS_CHECK(set(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, static_cast<int32_t>(half)));
  }
  CUBLAS_CHECK(set_pointers(plan->op, g));  // the heuristic sees the first call's, of the key's alignments
  const cudaDataType_t d_type = g.D_16 ? half : CUDA_R_32F;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->a, half, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->b, half, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->d, d_type, g.m, g.n, g.ldd));
  cublasLtMatmulPreference_t preference = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const auto prefer = [&](cublasLtMatmulPreferenceAttributes_t attribute, auto value) {
    return cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value);
  };
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  cublasStatus_t status = prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, kCublasWorkspaceBytes);
  const auto aligned = [&](cublasLtMatmulPreferenceAttributes_t attribute, int64_t bytes) {
    if (status == CUBLAS_STATUS_SUCCESS) status = prefer(attribute, static_cast<uint32_t>(bytes));
  };
  aligned(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key[12]);
  aligned(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key[13]);
  aligned(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key[14]);
  aligned(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key[14]);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(cublaslt_, plan->op, plan->a, plan->b, plan->d, plan->d, preference, 1,
                                            &heuristic, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  CUBLAS_CHECK(status);
  if (found == 0)
    throw std::runtime_error(std::string("cuBLASLt error at ") + __FILE__ + ":" + std::to_string(__LINE__) +
                             ": no algorithm for gemm16 m " + std::to_string(g.m) + " n " + std::to_string(g.n) +
                             " k " + std::to_string(g.k) + " epilogue " + std::to_string(static_cast<int>(g.epilogue)));
  plan->algo = heuristic.algo;
  slot = std::move(plan);
  return *slot;
}

template <class E>
void CudaLaunch::gemm16(const gpu_ops::Gemm16<E>& g) {
  gpu_ops::check_gemm16(g);
  LtPlan& plan = lt_plan(g);
  CUBLAS_CHECK(set_pointers(plan.op, g));
  const float alpha = 1.f, beta = g.accumulate ? 1.f : 0.f;
  void* d = g.D_16 ? static_cast<void*>(g.D_16) : static_cast<void*>(g.D_fp32);
  CUBLAS_CHECK(cublasLtMatmul(cublaslt_, plan.op, &alpha, g.A, plan.a, g.B, plan.b, &beta, d, plan.d, d, plan.d,
                              &plan.algo, lt_workspace_, kCublasWorkspaceBytes, stream_));
}

template void CudaLaunch::gemm16<bf16>(const gpu_ops::Gemm16<bf16>& g);
template void CudaLaunch::gemm16<fp16>(const gpu_ops::Gemm16<fp16>& g);

void CudaLaunch::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* A, int lda,
                      const float* B, int ldb, float beta, float* C, int ldc) {
  CUBLAS_CHECK(cublasSgemm(cublas_, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
                           &alpha, A, lda, B, ldb, &beta, C, ldc));
}

// Keys are non-negative token ids, so all 32 bits order them correctly (the sign bit is 0 for all).
void CudaLaunch::sort_pairs(const int32_t* keys_in, int32_t* keys_out, const int32_t* values_in, int32_t* values_out,
                            int n) {
  size_t bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in, keys_out, values_in, values_out, n, 0, 32,
                                             stream_));
  void* storage = sort_scratch_.get(within_reserve("sort storage bytes", bytes, sort_scratch_.bytes()));
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(storage, bytes, keys_in, keys_out, values_in,
                                             values_out, n, 0, 32, stream_));
}

void CudaLaunch::read_back(void* host, const void* src, size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace eth::kernels::cuda
