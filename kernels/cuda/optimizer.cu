// The optimizer ops and the step's reductions (kernels/gpu_ops/optimizer.hpp) for the CUDA backend.
#include "kernels/cuda/cuda_launch.cuh"
#include "kernels/gpu_ops/optimizer.hpp"

namespace eth::kernels {
template double gpu_ops::sum_of_squares<cuda::CudaLaunch>(cuda::CudaLaunch&, const float*, size_t);
template void gpu_ops::accumulate_sum<cuda::CudaLaunch>(cuda::CudaLaunch&, double*, const float*, size_t);
template void gpu_ops::adamw_update<cuda::CudaLaunch, float>(cuda::CudaLaunch&, float*, float*, const float*, float*,
                                                             float*, const AdamWSegment*, size_t,
                                                             const gpu_ops::AdamWSettings&);
template void gpu_ops::adamw_update<cuda::CudaLaunch, bf16>(cuda::CudaLaunch&, float*, bf16*, const float*, float*,
                                                            float*, const AdamWSegment*, size_t,
                                                            const gpu_ops::AdamWSettings&);
template void gpu_ops::adamw_update<cuda::CudaLaunch, fp16>(cuda::CudaLaunch&, float*, fp16*, const float*, float*,
                                                            float*, const AdamWSegment*, size_t,
                                                            const gpu_ops::AdamWSettings&);
}  // namespace eth::kernels
