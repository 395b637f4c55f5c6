// The probes on the GPU, launched as the CUDA backend launches its kernels.
#include "kernels/cuda/cuda_launch.cuh"
#include "tests/gpu/simt_probes.hpp"
#include "tests/gpu/simt_probes_run.hpp"

namespace eth::test::simt_probes {

std::vector<std::vector<uint32_t>> run_on_gpu() {
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  kernels::cuda::CudaLaunch launch(stream, nullptr);
  const size_t words = 32 * kSlots;
  uint32_t* out = nullptr;
  uint32_t* src = nullptr;
  CUDA_CHECK(cudaMalloc(&out, kProbes * words * sizeof(uint32_t)));
  CUDA_CHECK(cudaMemset(out, 0xef, kProbes * words * sizeof(uint32_t)));
  const std::vector<uint32_t> host_src = copy_source();
  CUDA_CHECK(cudaMalloc(&src, host_src.size() * sizeof(uint32_t)));
  CUDA_CHECK(cudaMemcpy(src, host_src.data(), host_src.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));
  const simt::LaunchShape warp{simt::Dim3(1), simt::Dim3(32), 0};
  launch.kernel(ShuffleProbe{out}, warp);
  launch.kernel(MmaProbe<kernels::bf16>{out + words}, warp);
  launch.kernel(LdmatrixProbe{out + 2 * words}, {simt::Dim3(1), simt::Dim3(32), sizeof(LdmatrixProbe::Smem)});
  launch.kernel(CpAsyncProbe{out + 3 * words, src}, {simt::Dim3(1), simt::Dim3(32), sizeof(CpAsyncProbe::Smem)});
  launch.kernel(MmaProbe<kernels::fp16>{out + 4 * words}, warp);
  std::vector<std::vector<uint32_t>> result(kProbes, std::vector<uint32_t>(words));
  for (int p = 0; p < kProbes; p++)
    CUDA_CHECK(cudaMemcpy(result[p].data(), out + p * words, words * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(out));
  CUDA_CHECK(cudaFree(src));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return result;
}

}  // namespace eth::test::simt_probes
